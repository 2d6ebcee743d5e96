import { NotFoundError, incrementalFieldSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route.ts';

const base = '/api/v1/ingress-incremental-fields';
const flowParams = {
  type: 'object',
  required: ['flowId'],
  properties: { flowId: { type: 'string', format: 'uuid' } },
} as const;

/** Where each polling flow's next poll starts (seed tag IngressIncrementalField). */
export function incrementalFieldRoutes({ store }: ApiContext) {
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
      handle: async ({ tenantId, query }) => ({ body: await store.listIncrementalFields(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{flowId}`,
      tag: 'IngressIncrementalField',
      scope: 'flows:read',
      summary: "Get a flow's incremental field",
      params: flowParams,
      responses: { 200: { description: 'The field.', schema: incrementalFieldSchema } },
      async handle({ tenantId, params }) {
        const field = await store.getIncrementalField(tenantId, params.flowId);
        if (!field) throw new NotFoundError(`flow ${params.flowId} has no incremental field (it has not polled yet)`);
        return { body: field };
      },
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
            default: 300_000,
            description: 'How far before the value the poll re-reads (ties, late writes).',
          },
        },
      },
      responses: { 200: { description: 'The field.', schema: incrementalFieldSchema } },
      async handle({ tenantId, params, body }) {
        if (!(await store.getFlow(tenantId, params.flowId))) throw new NotFoundError(`no flow ${params.flowId}`);
        const field = await store.putIncrementalField(tenantId, params.flowId, {
          field: 'updated_at',
          value: new Date(body.value).toISOString(),
          overlapMs: body.overlapMs ?? 300_000,
        });
        return { body: field };
      },
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
        if (!(await store.deleteIncrementalField(tenantId, params.flowId)))
          throw new NotFoundError(`flow ${params.flowId} has no incremental field`);
        return { status: 204 };
      },
    }),
  ];
}
