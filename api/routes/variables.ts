import { MIN_SECRET_LENGTH } from '../../engine/secrets/index.ts';
import { secretInfoSchema, variableSchema } from '../../engine/model/index.ts';
import type { NamedValues } from '../../engine/services/index.ts';
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
  collection: Omit<ByNameCollection<Variable>, 'item' | 'nameParams' | 'records'> & {
    /** The path parameters, when the base has more than `{name}`. */
    params?: ByNameCollection<Variable>['nameParams'];
    records: NamedValues;
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
      const { variable, created } = await collection.records.put(await ownerOf(request), params.name, body.value);
      return { status: created ? 201 : 200, body: variable };
    },
  };
  return [put, ...byNameRoutes({ ...collection, item: variableSchema, nameParams: collection.params ?? nameParams })];
}

export function variableRoutes({ values }: ApiContext) {
  return namedValueRoutes({
    records: values.variables,
    base: '/api/v1/global-variables',
    tag: 'GlobalVariable',
    noun: ['variable', 'variables'],
    summary: 'Create or replace a variable',
    scopes: { read: 'variables:read', write: 'variables:write' },
  });
}

export function secretRoutes({ values }: ApiContext) {
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
        const { secret, created } = await values.putSecret(tenantId, params.name, body.value);
        return { status: created ? 201 : 200, body: secret };
      },
    }),
    // Write-only: there is no route that reads one secret.
    ...byNameRoutes({
      records: values.secrets,
      base,
      tag: 'SecretGlobalVariable',
      noun: ['secret', 'secrets'],
      item: secretInfoSchema,
      nameParams,
      scopes: { read: 'secrets:read', write: 'secrets:write' },
    }),
  ];
}
