import { NotFoundError, batchSchema, batchStatuses, batchTaskSchema, runStatuses } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema, idParams } from '../route-kit/index.ts';

const base = '/api/v1/batches';
/** Failed tasks retried per call: a batch of a million is retried in calls the client repeats while `more`. */
const TASK_RETRY_LIMIT = 1000;

/** Batches (tag Batch) and their tasks (BatchTask): each poll of a fan-out node, each item it imported. */
export function batchRoutes({ store, runs }: ApiContext) {
  const load = async (tenantId: string, id: string) => {
    const batch = await store.getBatch(tenantId, id);
    if (!batch) throw new NotFoundError(`no batch ${id}`);
    return batch;
  };
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'Batch',
      scope: 'batches:read',
      summary: 'List batches, newest first',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: { ...pageQuerySchema, flowId: { type: 'string', format: 'uuid' }, status: { enum: batchStatuses } },
      },
      responses: {
        200: { description: 'A page of batches with their task counts.', schema: connectionSchema(batchSchema) },
      },
      handle: async ({ tenantId, query }) => ({
        body: await store.listBatches(tenantId, { flowId: query.flowId, status: query.status }, query),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'Batch',
      scope: 'batches:read',
      summary: 'Get a batch: its window, status, task counts and progress',
      params: idParams,
      responses: { 200: { description: 'The batch.', schema: batchSchema } },
      handle: async ({ tenantId, params }) => ({ body: await load(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}/tasks`,
      tag: 'BatchTask',
      scope: 'batches:read',
      summary: 'List the tasks of a batch in import order, with their status, error and run',
      params: idParams,
      query: {
        type: 'object',
        additionalProperties: false,
        properties: { ...pageQuerySchema, status: { enum: runStatuses } },
      },
      responses: { 200: { description: 'A page of tasks.', schema: connectionSchema(batchTaskSchema) } },
      async handle({ tenantId, params, query }) {
        await load(tenantId, params.id);
        return { body: await store.listBatchTasks(tenantId, params.id, { status: query.status }, query) };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/retry`,
      tag: 'BatchTask',
      scope: 'batches:write',
      summary: 'Retry the failed tasks of a batch',
      description:
        `At most ${TASK_RETRY_LIMIT} per call, in task order (\`more\` says whether to call again). ` +
        "Each failed task gets a new run of the task's message, going on from where the failed run stopped (the " +
        'steps it completed are carried over; what it sends goes under the same idempotency keys); the failed run ' +
        'stays in the history. The incremental field does not move back.',
      params: idParams,
      responses: {
        200: {
          description: 'The runs started.',
          schema: {
            type: 'object',
            required: ['retried', 'runIds', 'more'],
            properties: {
              retried: { type: 'integer' },
              runIds: { type: 'array', items: { type: 'string' } },
              more: { type: 'boolean', description: 'Failed tasks are left: call again.' },
            },
          },
        },
      },
      async handle({ tenantId, params }) {
        await load(tenantId, params.id);
        const retried = await runs.retryFailedTasks(tenantId, params.id, TASK_RETRY_LIMIT);
        return {
          body: { retried: retried.runs.length, runIds: retried.runs.map((run) => run.id), more: retried.more },
        };
      },
    }),
  ];
}
