import { ACTION_NAME } from '../../engine/plugins/index.ts';
import { tenantActionSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, fromRequest, pageQuerySchema, byNameRoutes } from '../route-kit/index.ts';

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', pattern: ACTION_NAME.source } },
} as const;
const versionParams = {
  type: 'object',
  required: ['name', 'version'],
  properties: { ...nameParams.properties, version: { type: 'integer', minimum: 1 } },
} as const;

/**
 * Tenant-defined actions (tag LowCodeAction): named, versioned JSONata transforms with input
 * and output schemas, run by nodes as `"operation": "action:<name>"`.
 */
export function actionRoutes({ actions }: ApiContext) {
  const base = '/api/v1/low-code-actions/actions';
  return [
    defineRoute({
      method: 'put',
      path: `${base}/{name}`,
      tag: 'LowCodeAction',
      scope: 'flows:write',
      summary: 'Save an action as its next version',
      description:
        'The expression is JSONata over the input; the input is validated before it runs and the output after. ' +
        'Versions are immutable; nodes run the latest unless their config names a version.',
      params: nameParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['expression'],
        properties: {
          description: { type: 'string', maxLength: 1000 },
          expression: { type: 'string', minLength: 1, maxLength: 20_000 },
          inputSchema: { type: 'object', default: {}, description: 'JSON Schema of the input (any JSON when absent).' },
          outputSchema: {
            type: 'object',
            default: {},
            description: 'JSON Schema of the output (any JSON when absent).',
          },
        },
      },
      responses: { 201: { description: 'The new version.', schema: tenantActionSchema } },
      async handle({ tenantId, params, body }) {
        const action = {
          name: params.name,
          description: body.description ?? null,
          expression: body.expression,
          inputSchema: body.inputSchema,
          outputSchema: body.outputSchema,
        };
        return { status: 201, body: await fromRequest('$.body', () => actions.save(tenantId, action)) };
      },
    }),
    ...byNameRoutes({
      base,
      tag: 'LowCodeAction',
      noun: ['action', 'actions'],
      item: tenantActionSchema,
      nameParams,
      scopes: { read: 'flows:read', write: 'flows:write' },
      records: actions,
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{name}/versions`,
      tag: 'LowCodeAction',
      scope: 'flows:read',
      summary: 'List the versions of an action, newest first',
      params: nameParams,
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: 'A page of versions.', schema: connectionSchema(tenantActionSchema) } },
      handle: async ({ tenantId, params, query }) => ({
        body: await actions.listVersions(tenantId, params.name, query),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{name}/versions/{version}`,
      tag: 'LowCodeAction',
      scope: 'flows:read',
      summary: 'Get a version of an action',
      params: versionParams,
      responses: { 200: { description: 'The version.', schema: tenantActionSchema } },
      handle: async ({ tenantId, params }) => ({
        body: await actions.getVersion(tenantId, params.name, params.version),
      }),
    }),
  ];
}
