import { MIN_SECRET_LENGTH } from '../../engine/secrets/index.ts';
import { secretContext } from '../../engine/secrets/index.ts';
import { secretInfoSchema, variableSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import type { Variable } from '../../engine/store/index.ts';
import { defineRoute, type RouteSpec } from '../route.ts';
import { byNameRoutes, type ByNameCollection } from './by-name.ts';

export const nameParams = {
  type: 'object',
  required: ['name'],
  properties: {
    name: {
      type: 'string',
      pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$',
      description: 'Referenced in flows as $vars.<name>, $secrets.<name> or $platform.<name>.',
    },
  },
} as const;

/** Named JSON values (variables, platform values): create-or-replace, list, get, delete. */
export function namedValueRoutes(
  collection: Omit<ByNameCollection<Variable>, 'item' | 'nameParams' | 'get'> & {
    /** The path parameters, when the base has more than `{name}`. */
    params?: ByNameCollection<Variable>['nameParams'];
    get: NonNullable<ByNameCollection<Variable>['get']>;
    put(owner: string, name: string, value: unknown): Promise<{ variable: Variable; created: boolean }>;
    summary: string;
  },
): RouteSpec[] {
  const ownerOf = collection.owner ?? (async ({ tenantId }) => tenantId);
  const put: RouteSpec = {
    method: 'put',
    path: `${collection.base}/{name}`,
    tag: collection.tag,
    scope: collection.scopes.write,
    summary: collection.summary,
    params: collection.params ?? nameParams,
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['value'],
      properties: { value: { description: 'Any JSON value.' } },
      examples: [{ value: 'https://erp.example.com/api' }],
    },
    responses: {
      200: { description: 'Replaced.', schema: variableSchema },
      201: { description: 'Created.', schema: variableSchema },
    },
    async handle(request) {
      const { params, body } = request as { params: { name: string }; body: { value: unknown } };
      const { variable, created } = await collection.put(await ownerOf(request), params.name, body.value);
      return { status: created ? 201 : 200, body: variable };
    },
  };
  return [put, ...byNameRoutes({ ...collection, item: variableSchema, nameParams: collection.params ?? nameParams })];
}

export function variableRoutes({ store }: ApiContext) {
  return namedValueRoutes({
    base: '/api/v1/global-variables',
    tag: 'GlobalVariable',
    noun: ['variable', 'variables'],
    summary: 'Create or replace a variable',
    scopes: { read: 'variables:read', write: 'variables:write' },
    put: (tenantId, name, value) => store.putVariable(tenantId, name, value),
    list: (tenantId, page) => store.listVariables(tenantId, page),
    get: (tenantId, name) => store.getVariable(tenantId, name),
    remove: (tenantId, name) => store.deleteVariable(tenantId, name),
  });
}

export function secretRoutes({ store, keyring, intake }: ApiContext) {
  const base = '/api/v1/secret-global-variables';
  return [
    defineRoute({
      method: 'put',
      path: `${base}/{name}`,
      tag: 'SecretGlobalVariable',
      scope: 'secrets:write',
      summary: 'Create or replace a secret (write-only: no response ever shows the value)',
      description: 'The value is sealed with AES-256-GCM under the current key id before it is stored.',
      params: nameParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['value'],
        properties: {
          value: {
            type: 'string',
            minLength: MIN_SECRET_LENGTH,
            maxLength: 65_536,
            description: `At least ${MIN_SECRET_LENGTH} characters: shorter values cannot be masked safely in logs.`,
          },
        },
        examples: [{ value: 'erp-api-token-0123456789' }],
      },
      responses: {
        200: { description: 'Replaced.', schema: secretInfoSchema },
        201: { description: 'Created.', schema: secretInfoSchema },
      },
      async handle({ tenantId, params, body }) {
        const { secret, created } = await store.putSecret(
          tenantId,
          params.name,
          keyring.seal(body.value, secretContext(tenantId, params.name)),
        );
        // A flow URL may verify with it: this process resolves the tenant's URLs again (others within
        // INTAKE_CACHE_TTL_MS).
        intake.invalidateTenant(tenantId);
        return { status: created ? 201 : 200, body: secret };
      },
    }),
    // Write-only: there is no route that reads one secret.
    ...byNameRoutes({
      base,
      tag: 'SecretGlobalVariable',
      noun: ['secret', 'secrets'],
      item: secretInfoSchema,
      nameParams,
      scopes: { read: 'secrets:read', write: 'secrets:write' },
      list: (tenantId, page) => store.listSecrets(tenantId, page),
      remove: async (tenantId, name) => {
        const removed = await store.deleteSecret(tenantId, name);
        intake.invalidateTenant(tenantId);
        return removed;
      },
    }),
  ];
}
