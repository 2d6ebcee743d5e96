import {
  REDO_COMPLETED_STEPS,
  NotFoundError,
  blockedTopicSchema,
  messageInfoSchema,
  messageStatuses,
  runSchema,
  runStatuses,
} from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import {
  connectionSchema,
  defineRoute,
  pageQuerySchema,
  heldChoice,
  heldOutcomeSchema,
  idParams,
} from '../route-kit/index.ts';

/** Bodies larger than this are listed without their content (`bodyTruncated`); the run still has all of it. */
export const MESSAGE_BODY_CAP_BYTES = 64 * 1024;

/** Most failed runs one retry call starts. */
const RETRY_LIMIT = 1000;
const DAY_MS = 24 * 3600 * 1000;

const topic = { type: 'string', minLength: 1, maxLength: 200, examples: ['refunds/create'] } as const;
const countsOf = (keys: readonly string[]) =>
  ({
    type: 'object',
    description: `Counts per status: ${keys.join(', ')}.`,
    additionalProperties: { type: 'integer' },
  }) as const;
const backlogSchema = {
  type: 'object',
  required: ['since', 'runs', 'messages', 'oldestWaiting'],
  properties: {
    since: { type: 'string', format: 'date-time' },
    runs: countsOf(runStatuses),
    messages: countsOf(messageStatuses),
    oldestWaiting: {
      type: ['object', 'null'],
      description: 'The oldest run queued or waiting for a retry.',
      properties: {
        runId: { type: 'string' },
        flowId: { type: 'string' },
        status: { type: 'string' },
        createdAt: { type: 'string' },
        ageMs: { type: 'integer' },
      },
    },
  },
} as const;
const topicParams = {
  type: 'object',
  required: ['topic'],
  properties: { topic: { ...topic, description: 'URL-encoded: refunds%2Fcreate.' } },
} as const;
/** Every inbound message with what became of it (tag MessageInfo), and replays. */
export function messageRoutes({ store, runs }: ApiContext) {
  const base = '/api/v1/messages';
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'MessageInfo',
      scope: 'messages:read',
      summary: 'List inbound messages, newest first',
      description:
        'Webhook deliveries (repeated ones too, as status duplicate), adapter calls, schedule ticks and ' +
        `poll items. Bodies over ${MESSAGE_BODY_CAP_BYTES} bytes are listed without content.`,
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...pageQuerySchema,
          flowId: { type: 'string', format: 'uuid' },
          status: { enum: messageStatuses },
          topic,
          receivedFrom: { type: 'string', format: 'date-time', description: 'Received at or after.' },
          receivedTo: { type: 'string', format: 'date-time', description: 'Received before.' },
        },
      },
      responses: { 200: { description: 'A page of messages.', schema: connectionSchema(messageInfoSchema) } },
      handle: async ({ tenantId, query }) => ({
        body: await store.listMessages(tenantId, query, query, MESSAGE_BODY_CAP_BYTES),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'MessageInfo',
      scope: 'messages:read',
      summary: "Get a message with its runs (a repeated delivery: the first one's runs)",
      params: idParams,
      responses: {
        200: {
          description: 'The message.',
          schema: {
            type: 'object',
            properties: { ...messageInfoSchema.properties, runs: { type: 'array', items: runSchema } },
          },
        },
      },
      async handle({ tenantId, params }) {
        const found = await store.getMessage(tenantId, params.id, MESSAGE_BODY_CAP_BYTES);
        if (!found) throw new NotFoundError(`no message ${params.id}`);
        return { body: { ...found.message, runs: found.runs } };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/replay`,
      tag: 'MessageInfo',
      scope: 'messages:write',
      summary: "Run a message again, on its flow's active version",
      description:
        'A new run that goes on from where the last one failed: on the same flow version, the steps it completed are ' +
        'carried over, not run again (unless `redoCompletedSteps`), and what the run sends goes under the same ' +
        'idempotency keys as before (they derive from the message and the step), so a receiver drops what it has. ' +
        "Refused (409) while the message's last run is unfinished or held (two replays at once start one run), for " +
        'a repeated delivery, and for a batch item (retry its batch instead).',
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: { redoCompletedSteps: { type: 'boolean', default: false, description: REDO_COMPLETED_STEPS } },
      },
      responses: {
        202: { description: 'The new run, queued.', schema: runSchema },
        409: {
          description:
            'Its last run is unfinished or held, it is a repeated delivery or a batch item, or its flow has no ' +
            'active version.',
        },
      },
      async handle({ tenantId, params, body }) {
        return { status: 202, body: await runs.replay(tenantId, params.id, body.redoCompletedSteps ?? false) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/message-queue',
      tag: 'MessageQueue',
      scope: 'messages:read',
      summary:
        'The backlog: runs per status (unfinished: all; finished: since `since`), messages since `since` per status, ' +
        'and the oldest waiting run',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          since: {
            type: 'string',
            format: 'date-time',
            description:
              'Count finished runs and messages from the start of this hour (default: 24 hours ago; finished runs ' +
              'are counted from rollups kept by the hour). Unfinished runs are always all counted.',
          },
        },
      },
      responses: { 200: { description: 'The backlog.', schema: backlogSchema } },
      handle: async ({ tenantId, query }) => ({
        body: await store.backlog(tenantId, query.since ?? new Date(Date.now() - DAY_MS).toISOString()),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/message-queue/retry-failed',
      tag: 'MessageQueue',
      scope: 'messages:write',
      summary: "Run again every message of a flow whose latest run failed, on the flow's active version",
      description:
        `At most ${RETRY_LIMIT} per call, oldest first (\`more\` says whether to call again). Batch items ` +
        'are retried with their batch.',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['flowId'],
        properties: { flowId: { type: 'string', format: 'uuid' } },
      },
      responses: {
        200: {
          description: 'The runs started.',
          schema: {
            type: 'object',
            required: ['retried', 'runIds', 'more'],
            properties: {
              retried: { type: 'integer' },
              runIds: { type: 'array', items: { type: 'string' } },
              more: { type: 'boolean' },
            },
          },
        },
      },
      async handle({ tenantId, body }) {
        const retried = await runs.retryFailedRuns(tenantId, body.flowId, RETRY_LIMIT);
        return {
          body: { retried: retried.runs.length, runIds: retried.runs.map((run) => run.id), more: retried.more },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/message-queue/held/release',
      tag: 'MessageQueue',
      scope: 'messages:write',
      summary: 'Run the held messages (of a topic) whose hold no longer applies, in arrival order',
      body: { type: 'object', additionalProperties: false, properties: { topic } },
      responses: { 200: { description: 'How many were released.', schema: heldOutcomeSchema } },
      handle: async ({ tenantId, body }) => ({
        body: await runs.settleHeld(tenantId, 'release', { topic: body.topic }, ''),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/message-queue/held/discard',
      tag: 'MessageQueue',
      scope: 'messages:write',
      summary: 'Discard the held messages (of a topic): their runs end cancelled',
      body: { type: 'object', additionalProperties: false, properties: { topic } },
      responses: { 200: { description: 'How many were discarded.', schema: heldOutcomeSchema } },
      handle: async ({ tenantId, body }) => ({
        body: await runs.settleHeld(tenantId, 'discard', { topic: body.topic }, 'discarded from the message queue'),
      }),
    }),
  ];
}

/** Blocked topics (tag BlockedTopic): deliveries are verified, recorded and answered, but held. */
export function blockedTopicRoutes({ blockedTopics }: ApiContext) {
  const base = '/api/v1/blocked-topics';
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'BlockedTopic',
      scope: 'messages:read',
      summary: 'List blocked topics with the number of messages each holds',
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: 'A page of blocked topics.', schema: connectionSchema(blockedTopicSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await blockedTopics.list(tenantId, query) }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{topic}`,
      tag: 'BlockedTopic',
      scope: 'messages:write',
      summary: 'Block a topic (e.g. refunds/create)',
      description:
        "Deliveries of the topic (named in its family's topic header, X-Topic or X-Event-Type) are still verified, " +
        'recorded and answered 2xx, so the sender keeps its subscription; their runs are held until the topic is ' +
        'unblocked.',
      params: topicParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: { reason: { type: 'string', maxLength: 500 } },
        examples: [{ reason: 'ERP upgrade until 06:00 UTC' }],
      },
      responses: {
        200: { description: 'Already blocked: the reason is updated.', schema: blockedTopicSchema },
        201: { description: 'Blocked.', schema: blockedTopicSchema },
      },
      async handle({ tenantId, params, body }) {
        const { blockedTopic, created } = await blockedTopics.block(tenantId, params.topic, body.reason ?? null);
        return { status: created ? 201 : 200, body: blockedTopic };
      },
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{topic}`,
      tag: 'BlockedTopic',
      scope: 'messages:write',
      summary: 'Unblock a topic, and release (run in arrival order), discard or keep its held messages',
      params: topicParams,
      query: { type: 'object', additionalProperties: false, properties: { heldMessages: heldChoice } },
      responses: { 200: { description: 'What became of the held messages.', schema: heldOutcomeSchema } },
      handle: async ({ tenantId, params, query }) => ({
        body: await blockedTopics.unblock(tenantId, params.topic, query.heldMessages),
      }),
    }),
  ];
}
