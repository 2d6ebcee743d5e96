import { statisticsSchema } from '../../engine/model/index.ts';
import { MAX_STATISTICS_RANGE_MS } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, fromRequest } from '../route-kit/index.ts';

const DAY_MS = 86_400_000;

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
export function statisticsRoutes({ statistics }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/statistics',
      tag: 'Statistic',
      scope: 'runs:read',
      summary: 'Runs per flow and status, with duration percentiles, and messages per topic, per hour or day',
      description:
        'Buckets are UTC. Default range: the last 24 hours. The range widens to whole buckets (the answer says ' +
        `which): counts come from rollups kept by the hour and the day. At most ${MAX_STATISTICS_RANGE_MS.hour / DAY_MS} ` +
        `days by the hour, ${MAX_STATISTICS_RANGE_MS.day / DAY_MS} by the day. Percentiles come from histograms whose buckets ` +
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
      handle: async ({ tenantId, query }) => ({
        body: await fromRequest('$.query', async () => statistics.over(tenantId, query)),
      }),
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
      handle: async ({ tenantId }) => ({ body: await statistics.summary(tenantId) }),
    }),
  ];
}
