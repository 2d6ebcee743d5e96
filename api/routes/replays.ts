import {
  DEFAULT_REPLAY_RATE,
  LOWEST_PRIORITY,
  MAX_REPLAY_RATE,
  MAX_RUNNING_REPLAYS,
  REPLAY_COUNT_LIMIT,
  REDO_COMPLETED_STEPS,
  ValidationError,
  replayFilterSchema,
  replaySchema,
} from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, fromRequest, pageQuerySchema, idParams } from '../route-kit/index.ts';

/** Longest Idempotency-Key a replay is asked with (as at flow URLs). */
const MAX_REQUEST_KEY = 256;

const replayRequestSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    filter: replayFilterSchema,
    ratePerSecond: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_REPLAY_RATE,
      default: DEFAULT_REPLAY_RATE,
      description: 'Most runs started a second, so that a replay does not flood the flow or what it calls.',
    },
    dryRun: {
      type: 'boolean',
      default: false,
      description: 'Only count what the filter matches now; nothing is made.',
    },
    redoCompletedSteps: { type: 'boolean', default: false, description: REDO_COMPLETED_STEPS },
    priority: {
      type: 'integer',
      minimum: 1,
      maximum: 5,
      default: LOWEST_PRIORITY,
      description:
        "1 (first) to 5: where its runs go among the tenant's waiting runs (flowControl.priority). The lowest by " +
        'default, so that a replay does not hold up what arrives meanwhile.',
    },
  },
  examples: [{ filter: { flowId: '019a0000-0000-7000-8000-000000000001', errorKind: 'permanent' }, dryRun: true }],
} as const;

/** Bulk replays (tag MessageQueue): made here, worked off by the workers at their rate. */
export function replayRoutes({ replays }: ApiContext) {
  const base = '/api/v1/message-queue/replays';
  return [
    defineRoute({
      method: 'post',
      path: base,
      tag: 'MessageQueue',
      scope: 'messages:write',
      summary: 'Run again every message whose latest run failed (or was handled), matching a filter, at a bounded rate',
      description:
        'Counts first with `dryRun`. Otherwise makes one tracked replay of what the filter matches now: the workers ' +
        "start a new run for each message, on its flow's active version, at most `ratePerSecond` a second, each " +
        'naming the run it replays (`replayOf`) and going on from where it failed: on the same version, the steps it ' +
        'completed are carried over, not run again (unless `redoCompletedSteps`), and what is sent goes under the ' +
        'same idempotency keys (they derive from the message and the step). A message is run again only while its ' +
        'latest run still ended so: replays at once or asked again replay nothing twice, and the same ' +
        "`Idempotency-Key` answers the replay it made. A flow's calls are left to their callers unless " +
        '`includeCalls`. Batch items are replayed by naming their batch (`batchId`): its failed tasks are tried ' +
        "again as the batch's retry does.",
      headers: { 'Idempotency-Key': 'Names this replay: asked again with it, the same replay is answered (200).' },
      body: replayRequestSchema,
      responses: {
        200: {
          description: 'A dry run: how many messages match now; or the replay this Idempotency-Key made before.',
          schema: {
            anyOf: [
              {
                type: 'object',
                additionalProperties: false,
                required: ['dryRun', 'count', 'exact'],
                properties: {
                  dryRun: { const: true },
                  count: { type: 'integer', description: `Counted up to ${REPLAY_COUNT_LIMIT}.` },
                  exact: { type: 'boolean', description: 'false: at least `count` match.' },
                },
              },
              replaySchema,
            ],
          },
        },
        202: { description: 'The replay, running.', schema: replaySchema },
        404: { description: 'The filter names a flow or batch that is not of this tenant (`errors` gives its path).' },
        409: { description: `The tenant has ${MAX_RUNNING_REPLAYS} replays running already.` },
      },
      async handle({ tenantId, body, req }) {
        if (body.dryRun)
          return { body: { dryRun: true, ...(await fromRequest('$.body', () => replays.count(tenantId, body))) } };
        const requestKey = req.get('idempotency-key') ?? null;
        if (requestKey !== null && (requestKey.length === 0 || requestKey.length > MAX_REQUEST_KEY))
          throw new ValidationError('Invalid request', [
            { path: '$.headers.idempotency-key', message: `must be 1-${MAX_REQUEST_KEY} characters` },
          ]);
        const { replay, created } = await fromRequest('$.body', () => replays.start(tenantId, { ...body, requestKey }));
        return { status: created ? 202 : 200, body: replay };
      },
    }),
    defineRoute({
      method: 'get',
      path: base,
      tag: 'MessageQueue',
      scope: 'messages:read',
      summary: 'List bulk replays, newest first',
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: 'A page of replays.', schema: connectionSchema(replaySchema) } },
      handle: async ({ tenantId, query }) => ({ body: await replays.list(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'MessageQueue',
      scope: 'messages:read',
      summary: 'A bulk replay and its progress',
      params: idParams,
      responses: { 200: { description: 'The replay.', schema: replaySchema } },
      handle: async ({ tenantId, params }) => ({ body: await replays.get(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/cancel`,
      tag: 'MessageQueue',
      scope: 'messages:write',
      summary: 'Stop a bulk replay: the runs it started go on, no more are started',
      params: idParams,
      responses: { 200: { description: 'The replay, cancelled (or as it ended).', schema: replaySchema } },
      handle: async ({ tenantId, params }) => ({ body: await replays.cancel(tenantId, params.id) }),
    }),
  ];
}
