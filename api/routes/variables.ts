import { secretContext } from '../../engine/secrets/keyring.ts';
import { secretInfoSchema, variableSchema } from '../../engine/resources.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route.ts';
import { byNameRoutes } from './by-name.ts';

const nameParams = {
  type: 'object', required: ['name'],
  properties: { name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'Referenced in flows as $vars.<name> / $secrets.<name>.' } },
} as const;

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
    ...byNameRoutes({
      base, tag: 'GlobalVariable', noun: ['variable', 'variables'], item: variableSchema, nameParams,
      scopes: { read: 'variables:read', write: 'variables:write' },
      list: (tenantId, page) => store.listVariables(tenantId, page),
      get: (tenantId, name) => store.getVariable(tenantId, name),
      remove: (tenantId, name) => store.deleteVariable(tenantId, name),
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
    // Write-only: there is no route that reads one secret.
    ...byNameRoutes({
      base, tag: 'SecretGlobalVariable', noun: ['secret', 'secrets'], item: secretInfoSchema, nameParams,
      scopes: { read: 'secrets:read', write: 'secrets:write' },
      list: (tenantId, page) => store.listSecrets(tenantId, page),
      remove: (tenantId, name) => store.deleteSecret(tenantId, name),
    }),
  ];
}
