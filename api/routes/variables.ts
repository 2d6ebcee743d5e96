import { NotFoundError } from '../../engine/errors.ts';
import { secretContext } from '../../engine/secrets/keyring.ts';
import { secretInfoSchema, variableSchema } from '../../engine/resources.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route.ts';

const nameParams = {
  type: 'object', required: ['name'],
  properties: { name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'Referenced in flows as $vars.<name> / $secrets.<name>.' } },
} as const;
const pageQuery = { type: 'object', additionalProperties: false, properties: pageQuerySchema } as const;

export function variableRoutes({ store }: ApiContext) {
  const base = '/api/v1/global-variables';
  return [
    defineRoute({
      method: 'put', path: `${base}/{name}`, tag: 'GlobalVariable', scope: 'variables:write',
      summary: 'Create or replace a variable', params: nameParams,
      body: { type: 'object', additionalProperties: false, required: ['value'], properties: { value: { description: 'Any JSON value.' } } },
      responses: { 200: { description: 'Replaced.', schema: variableSchema }, 201: { description: 'Created.', schema: variableSchema } },
      async handle({ tenantId, params, body }) {
        const { variable, created } = await store.putVariable(tenantId, params.name, body.value);
        return { status: created ? 201 : 200, body: variable };
      },
    }),
    defineRoute({
      method: 'get', path: base, tag: 'GlobalVariable', scope: 'variables:read',
      summary: 'List variables by name', query: pageQuery,
      responses: { 200: { description: 'A page of variables.', schema: connectionSchema(variableSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await store.listVariables(tenantId, query) }),
    }),
    defineRoute({
      method: 'get', path: `${base}/{name}`, tag: 'GlobalVariable', scope: 'variables:read',
      summary: 'Get a variable', params: nameParams,
      responses: { 200: { description: 'The variable.', schema: variableSchema } },
      async handle({ tenantId, params }) {
        const variable = await store.getVariable(tenantId, params.name);
        if (!variable) throw new NotFoundError(`no variable ${params.name}`);
        return { body: variable };
      },
    }),
    defineRoute({
      method: 'delete', path: `${base}/{name}`, tag: 'GlobalVariable', scope: 'variables:write',
      summary: 'Delete a variable', params: nameParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        if (!(await store.deleteVariable(tenantId, params.name))) throw new NotFoundError(`no variable ${params.name}`);
        return { status: 204 };
      },
    }),
  ];
}

export function secretRoutes({ store, keyring }: ApiContext) {
  const base = '/api/v1/secret-global-variables';
  return [
    defineRoute({
      method: 'put', path: `${base}/{name}`, tag: 'SecretGlobalVariable', scope: 'secrets:write',
      summary: 'Create or replace a secret (write-only: no response ever shows the value)',
      description: 'The value is sealed with AES-256-GCM under the current key id before it is stored.',
      params: nameParams,
      body: { type: 'object', additionalProperties: false, required: ['value'], properties: { value: { type: 'string', minLength: 1, maxLength: 65_536 } } },
      responses: { 200: { description: 'Replaced.', schema: secretInfoSchema }, 201: { description: 'Created.', schema: secretInfoSchema } },
      async handle({ tenantId, params, body }) {
        const { secret, created } = await store.putSecret(tenantId, params.name, keyring.seal(body.value, secretContext(tenantId, params.name)));
        return { status: created ? 201 : 200, body: secret };
      },
    }),
    defineRoute({
      method: 'get', path: base, tag: 'SecretGlobalVariable', scope: 'secrets:read',
      summary: 'List secrets: names, key ids, fingerprints and timestamps', query: pageQuery,
      responses: { 200: { description: 'A page of secrets, without values.', schema: connectionSchema(secretInfoSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await store.listSecrets(tenantId, query) }),
    }),
    defineRoute({
      method: 'delete', path: `${base}/{name}`, tag: 'SecretGlobalVariable', scope: 'secrets:write',
      summary: 'Delete a secret', params: nameParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        if (!(await store.deleteSecret(tenantId, params.name))) throw new NotFoundError(`no secret ${params.name}`);
        return { status: 204 };
      },
    }),
  ];
}
