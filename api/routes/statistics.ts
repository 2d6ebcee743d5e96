import { ValidationError, statisticsSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route-kit/index.ts';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
/** Longest range per interval: at most 744 hourly or 400 daily buckets per flow. */
const MAX_RANGE_MS = { hour: 31 * DAY_MS, day: 400 * DAY_MS } as const;

const countsOf = { type: 'object', additionalProperties: { type: 'integer' } } as const;
const dashboardSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['activeFlows', 'last24h', 'backlog', 'oldestWaiting', 'lastErrors', 'quota', 'state'],
  properties: {
    activeFlows: { type: 'integer' },
    last24h: {
      type: 'object',
      required: ['runs', 'failureRate'],
      properties: {
        runs: { ...countsOf, description: 'Runs created in the last 24 h, by status.' },
        failureRate: { type: ['number', 'null'], description: 'Failed of finished, 0..1.' },
      },
    },
    backlog: { ...countsOf, description: 'Unfinished runs: held, queued, running, waiting.' },
    oldestWaiting: {
      type: ['object', 'null'],
      properties: {
        runId: { type: 'string' },
        flowId: { type: 'string' },
        createdAt: { type: 'string' },
        ageMs: { type: 'integer' },
      },
    },
    quota: {
      type: 'object',
      additionalProperties: false,
      required: ['perSecond', 'burst', 'available', 'maxQueuedRuns', 'queuedRuns'],
      description:
        "The tenant's intake quota at its flow URLs and what is left: over it, deliveries are answered 429 with " +
        'Retry-After and nothing is recorded.',
      properties: {
        perSecond: { type: 'integer', description: 'Deliveries accepted per second, sustained.' },
        burst: { type: 'integer', description: 'Deliveries accepted at once.' },
        available: { type: 'integer', description: 'Deliveries that would be accepted at once now.' },
        maxQueuedRuns: { type: 'integer', description: 'Most runs waiting to start (0: no cap).' },
        queuedRuns: { type: 'integer', description: 'Runs waiting for their turn to start now.' },
      },
    },
    state: {
      type: 'object',
      description:
        'What the tenant keeps, by kind (flows, variables, secrets, action versions, destinations, data spaces, ' +
        "documents), against the deployment's limits: a write past one is refused (409).",
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['items', 'bytes', 'maxItems', 'maxBytes'],
        properties: {
          items: { type: 'integer' },
          bytes: { type: 'integer', description: 'Their size as JSON text.' },
          maxItems: { type: ['integer', 'null'], description: 'null: no limit.' },
          maxBytes: { type: ['integer', 'null'], description: 'null: no limit.' },
        },
      },
    },
    lastErrors: {
      type: 'array',
      description: 'Per flow, its latest failed run.',
      items: {
        type: 'object',
        properties: {
          flowId: { type: 'string' },
          flowName: { type: 'string' },
          runId: { type: 'string' },
          error: { type: ['object', 'null'] },
          finishedAt: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;

/** Statistics (tag Statistic) and the tenant's summary (Dashboard), from the recorded runs and messages. */
export function statisticsRoutes({ store, intake }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/statistics',
      tag: 'Statistic',
      scope: 'runs:read',
      summary: 'Runs per flow and status, with duration percentiles, and messages per topic, per hour or day',
      description:
        'Buckets are UTC. Default range: the last 24 hours. The range widens to whole buckets (the answer says ' +
        `which): counts come from rollups kept by the hour and the day. At most ${MAX_RANGE_MS.hour / DAY_MS} ` +
        `days by the hour, ${MAX_RANGE_MS.day / DAY_MS} by the day. Percentiles come from histograms whose buckets ` +
        'are within 4.5 % of the values they count.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          from: { type: 'string', format: 'date-time' },
          to: { type: 'string', format: 'date-time' },
          interval: { enum: ['hour', 'day'], default: 'hour' },
          flowId: { type: 'string', format: 'uuid' },
        },
      },
      responses: { 200: { description: 'The statistics.', schema: statisticsSchema } },
      async handle({ tenantId, query }) {
        const to = query.to ? Date.parse(query.to) : Date.now();
        const from = query.from ? Date.parse(query.from) : to - DAY_MS;
        if (from >= to)
          throw new ValidationError('Invalid range', [{ path: '$.query.from', message: 'must be before to' }]);
        if (to - from > MAX_RANGE_MS[query.interval]) {
          throw new ValidationError('Range too long', [
            {
              path: '$.query.from',
              message:
                `is more than ${MAX_RANGE_MS[query.interval] / DAY_MS} days before to ` +
                `(interval ${query.interval})`,
            },
          ]);
        }
        return {
          body: await store.statistics(tenantId, {
            from: new Date(from).toISOString(),
            to: new Date(to).toISOString(),
            interval: query.interval,
            flowId: query.flowId,
          }),
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/dashboard',
      tag: 'Dashboard',
      scope: 'runs:read',
      summary:
        'The tenant at a glance: active flows, the last 24 h of runs and their failure rate, the backlog, each ' +
        "flow's last error, its intake quota and what is left of it, what it keeps against its limits",
      responses: { 200: { description: 'The summary.', schema: dashboardSchema } },
      async handle({ tenantId }) {
        const [backlog, health, quota, state] = await Promise.all([
          store.backlog(tenantId, new Date(Date.now() - DAY_MS).toISOString()),
          store.flowHealth(tenantId),
          intake.quota(tenantId),
          store.tenantUsage(tenantId),
        ]);
        const { held, queued, running, waiting, failed, ...others } = backlog.runs;
        const finished = failed + Object.values(others).reduce((sum, n) => sum + n, 0);
        return {
          body: {
            activeFlows: health.activeFlows,
            last24h: { runs: backlog.runs, failureRate: finished === 0 ? null : failed / finished },
            backlog: { held, queued, running, waiting },
            oldestWaiting: backlog.oldestWaiting,
            lastErrors: health.lastErrors,
            quota,
            state,
          },
        };
      },
    }),
  ];
}
