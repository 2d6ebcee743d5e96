import { incrementalFieldSchema } from '../../engine/model/index.ts';
import { DEFAULT_POLL_OVERLAP_MS } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route-kit/index.ts';

const base = '/api/v1/ingress-incremental-fields';
const flowParams = {
  type: 'object',
  required: ['flowId'],
  properties: { flowId: { type: 'string', format: 'uuid' } },
} as const;

/** Where each polling flow's next poll starts (tag IngressIncrementalField). */
export function incrementalFieldRoutes({ incrementalFields }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'IngressIncrementalField',
      scope: 'flows:read',
      summary: "List the incremental fields of the tenant's polling flows",
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: {
        200: { description: 'A page of incremental fields.', schema: connectionSchema(incrementalFieldSchema) },
      },
      handle: async ({ tenantId, query }) => ({ body: await incrementalFields.list(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{flowId}`,
      tag: 'IngressIncrementalField',
      scope: 'flows:read',
      summary: "Get a flow's incremental field",
      params: flowParams,
      responses: { 200: { description: 'The field.', schema: incrementalFieldSchema } },
      handle: async ({ tenantId, params }) => ({ body: await incrementalFields.get(tenantId, params.flowId) }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{flowId}`,
      tag: 'IngressIncrementalField',
      scope: 'flows:write',
      summary: "Set a flow's incremental field: rewind it for a backfill, or move it forward",
      description:
        'The next poll reads from `value` minus the overlap. A poll running now still finishes its own window.',
      params: flowParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['value'],
        properties: {
          value: { type: 'string', format: 'date-time' },
          overlapMs: {
            type: 'integer',
            minimum: 0,
            maximum: 86_400_000,
            default: DEFAULT_POLL_OVERLAP_MS,
            description: 'How far before the value the poll re-reads (ties, late writes).',
          },
        },
      },
      responses: { 200: { description: 'The field.', schema: incrementalFieldSchema } },
      handle: async ({ tenantId, params, body }) => ({
        body: await incrementalFields.set(tenantId, params.flowId, new Date(body.value), body.overlapMs),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{flowId}`,
      tag: 'IngressIncrementalField',
      scope: 'flows:write',
      summary: "Reset a flow's incremental field: the next poll starts from its initial look-back",
      params: flowParams,
      responses: { 204: { description: 'Reset.' } },
      async handle({ tenantId, params }) {
        await incrementalFields.reset(tenantId, params.flowId);
        return { status: 204 };
      },
    }),
  ];
}
