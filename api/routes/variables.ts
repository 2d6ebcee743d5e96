import { MIN_SECRET_LENGTH } from '../../engine/secrets/index.ts';
import { secretInfoSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, byNameRoutes, nameParams, namedValueRoutes } from '../route-kit/index.ts';

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
