import { jobStates } from '../../engine/queue/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, wholeList } from '../route-kit/index.ts';

const queueSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'paused', 'counts', 'workers', 'backlog'],
  properties: {
    name: { type: 'string' },
    paused: { type: 'boolean' },
    counts: {
      type: 'object',
      description: `Jobs per state: ${jobStates.join(', ')}.`,
      additionalProperties: { type: 'integer' },
    },
    workers: { type: 'integer', description: 'Workers whose heartbeat is fresh (run queue only; 0 elsewhere).' },
    backlog: {
      type: 'object',
      additionalProperties: false,
      required: ['runs', 'tenants'],
      description:
        "Runs waiting in the tenants' lanes for their turn (run queue only): they become jobs as workers free " +
        'slots, tenants served in turn, so the job counts show only what workers are about to take.',
      properties: {
        runs: { type: 'integer' },
        tenants: {
          type: 'array',
          description: 'The 20 tenants with the most waiting runs, most first.',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['tenant', 'runs'],
            properties: { tenant: { type: 'string' }, runs: { type: 'integer' } },
          },
        },
      },
    },
  },
} as const;
const queueParams = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } as const;
const countSchema = (description: string) =>
  ({ type: 'object', required: ['count'], properties: { count: { type: 'integer', description } } }) as const;

/**
 * The BullMQ queues (tag Queue), for operators: every tenant's jobs. Runs live in the store;
 * these act on jobs (a failed job's run is retried with MessageQueue, per tenant).
 */
export function queueRoutes({ queues }: ApiContext) {
  const base = '/api/v1/queues';
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'Queue',
      scope: 'platform:admin',
      summary: 'List the queues with their job counts per state',
      responses: { 200: { description: 'Every queue, in one page.', schema: connectionSchema(queueSchema) } },
      handle: async () => ({ body: wholeList(await queues.list()) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{name}`,
      tag: 'Queue',
      scope: 'platform:admin',
      summary: 'Get a queue with its job counts per state',
      params: queueParams,
      responses: { 200: { description: 'The queue.', schema: queueSchema } },
      handle: async ({ params }) => ({ body: await queues.describe(params.name) }),
    }),
    ...(['pause', 'resume'] as const).map((change) =>
      defineRoute({
        method: 'post',
        path: `${base}/{name}/${change}`,
        tag: 'Queue',
        scope: 'platform:admin',
        summary:
          change === 'pause'
            ? 'Pause a queue: workers finish what they hold and take no new job; intake still records and enqueues'
            : 'Resume a paused queue',
        params: queueParams,
        responses: { 200: { description: 'The queue.', schema: queueSchema } },
        handle: async ({ params }) => ({ body: await queues[change](params.name) }),
      }),
    ),
    defineRoute({
      method: 'post',
      path: `${base}/{name}/retry-failed`,
      tag: 'Queue',
      scope: 'platform:admin',
      summary: 'Move failed jobs back to waiting',
      description:
        'A job fails when its attempts ran out on faults outside the run (the store or Redis unreachable); a run ' +
        'that failed on its own error is finished and stays so — replay its message instead.',
      params: queueParams,
      responses: {
        200: {
          description: 'How many failed jobs there were.',
          schema: countSchema('Failed jobs moved back to waiting.'),
        },
      },
      handle: async ({ params }) => ({ body: { count: await queues.retryFailed(params.name) } }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{name}/clean`,
      tag: 'Queue',
      scope: 'platform:admin',
      summary: 'Remove finished jobs older than a grace period (runs stay in the store)',
      params: queueParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          state: { enum: ['completed', 'failed'], default: 'completed' },
          graceMs: {
            type: 'integer',
            minimum: 0,
            default: 3_600_000,
            description: 'Keep jobs that finished more recently than this.',
          },
          limit: { type: 'integer', minimum: 1, maximum: 100_000, default: 10_000 },
        },
      },
      responses: { 200: { description: 'How many jobs were removed.', schema: countSchema('Jobs removed.') } },
      handle: async ({ params, body }) => ({
        body: {
          count: await queues.clean(params.name, { state: body.state, graceMs: body.graceMs, limit: body.limit }),
        },
      }),
    }),
  ];
}
