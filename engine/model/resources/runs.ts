import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, nullableTimestamp, uuid, errorRecordSchema, ownerSchema } from './common.ts';

/** Why a run waits without a job: its tenant is suspended, or its message's topic is blocked. */
export const holdReasons = ['suspended', 'topic'] as const;

/**
 * `handled`: a node failed, and the error path the flow gives it ran to the end. `debounced`: a later message with
 * the same debounce key took its place before it started (flowControl.debounce).
 */
export const terminalRunStatuses = [
  'succeeded',
  'failed',
  'handled',
  'filtered',
  'skipped',
  'cancelled',
  'debounced',
] as const;

export const runStatuses = ['held', 'queued', 'running', 'waiting', ...terminalRunStatuses] as const;

/** A run on its way: queued, taken up, or waiting for a retry. */
export const unfinishedRunStatuses = ['queued', 'running', 'waiting'] as const;

export const stepStatuses = ['succeeded', 'failed', 'waiting', 'filtered', 'skipped'] as const;

export const runSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'tenantId',
    'id',
    'flowId',
    'flowVersion',
    'messageId',
    'status',
    'heldBy',
    'attempts',
    'error',
    'createdAt',
    'startedAt',
    'finishedAt',
    'batchId',
    'parentRunId',
    'callDepth',
    'replayOf',
    'concurrency',
    'debounce',
    'debouncedBy',
    'budgetWaitMs',
  ],
  properties: {
    tenantId: ownerSchema,
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    messageId: uuid,
    status: {
      enum: runStatuses,
      description: 'held: recorded but not queued (tenant suspended or topic blocked) until released or discarded.',
    },
    heldBy: { anyOf: [{ enum: holdReasons }, { type: 'null' }], description: 'Why a held run is held.' },
    attempts: {
      type: 'integer',
      description:
        'Passes: how many times a worker took the run up (a wait, a call or a retry ends a pass), not retries.',
    },
    error: { anyOf: [errorRecordSchema, { type: 'null' }] },
    createdAt: timestamp,
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    batchId: { anyOf: [uuid, { type: 'null' }], description: 'Set on a batch task: the batch it belongs to.' },
    parentRunId: {
      anyOf: [uuid, { type: 'null' }],
      description: 'Set on a run a call node started: the calling run (its runs: GET /runs?parentRunId=).',
    },
    callDepth: { type: 'integer', description: 'How many calls deep: 0 for a run a delivery or schedule started.' },
    replayOf: {
      anyOf: [uuid, { type: 'null' }],
      description:
        "Set on a run a replay or a retry started (of a message, a flow's failed runs, a batch's tasks): the run it " +
        'replays, whose completed steps it carried over when both ran the same flow version.',
    },
    concurrency: {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['key', 'scope', 'limit'],
          properties: {
            key: { type: 'string' },
            scope: { enum: ['flow', 'tenant'] },
            limit: { type: 'integer' },
          },
        },
        { type: 'null' },
      ],
      description:
        "The flow's concurrency key as its message gave it (flowControl.concurrency), when the flow has one: runs " +
        'with an equal key and scope wait for one another. A replay or a retry keeps the key of the run it replays.',
    },
    debounce: {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['key', 'periodMs', 'maxWaitMs'],
          properties: { key: { type: 'string' }, periodMs: { type: 'integer' }, maxWaitMs: { type: 'integer' } },
        },
        { type: 'null' },
      ],
      description:
        "The flow's debounce key as the message gave it (flowControl.debounce), when the flow has one: a later message " +
        "with the same key within the period takes this run's place.",
    },
    budgetWaitMs: {
      type: 'integer',
      description:
        'How long its requests waited for their turns on outbound budgets, in place or as a waiting run, over all ' +
        'its passes, in ms (0: never).',
    },
    debouncedBy: {
      anyOf: [uuid, { type: 'null' }],
      description:
        'Set on a debounced run: the run of the next message with its debounce key, which took its place (follow ' +
        'debouncedBy from run to run to the one that ran).',
    },
  },
} as const;

export type RunDebounce = NonNullable<FromSchema<typeof runSchema>['debounce']>;

export type RunConcurrency = NonNullable<FromSchema<typeof runSchema>['concurrency']>;

/** The most exchanges a step keeps, and the most of each body (decision 29). */
export const MAX_RECORDED_EXCHANGES = 20;
export const MAX_RECORDED_BODY_BYTES = 64 * 1024;

const recordedBody = {
  type: ['string', 'null'],
  description: `The body as text (UTF-8), its first ${MAX_RECORDED_BODY_BYTES / 1024} KiB; secrets masked.`,
} as const;
const truncated = { type: 'boolean', description: 'The body was longer than what is kept.' } as const;
const recordedHeaders = {
  type: 'object',
  additionalProperties: { type: 'string' },
  description: 'Names in lower case; credentials (authorization, cookies, API keys) and secrets masked.',
} as const;

/** One request an operation sent and what came back, as its step keeps it (decision 29). */
export const exchangeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['request', 'response'],
  properties: {
    request: {
      type: 'object',
      additionalProperties: false,
      required: ['method', 'url', 'headers', 'body'],
      properties: {
        method: { type: 'string' },
        url: { type: 'string' },
        headers: recordedHeaders,
        body: recordedBody,
        truncated,
      },
    },
    response: {
      description: 'What came back; null when nothing did (`error` says why).',
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['status', 'headers', 'body'],
          properties: {
            status: { type: 'integer' },
            headers: recordedHeaders,
            body: recordedBody,
            truncated,
          },
        },
        { type: 'null' },
      ],
    },
    error: { type: 'string', description: 'Why no answer came (refused, reset, timed out).' },
  },
} as const;

export const stepSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['runId', 'key', 'nodeId', 'status', 'attempts', 'output', 'error', 'startedAt', 'finishedAt'],
  description: 'The checkpoint of one node, or of one memoized sub-step (key = <node>/<name>).',
  properties: {
    runId: uuid,
    key: { type: 'string' },
    nodeId: { type: 'string' },
    status: { enum: stepStatuses },
    attempts: {
      type: 'integer',
      description: 'Failed tries so far (not counting "later" waits), plus one when it succeeded.',
    },
    output: { description: "The node's output, secrets redacted." },
    error: { anyOf: [errorRecordSchema, { type: 'null' }] },
    startedAt: timestamp,
    finishedAt: nullableTimestamp,
    exchanges: {
      type: 'array',
      maxItems: MAX_RECORDED_EXCHANGES,
      items: exchangeSchema,
      description: `The requests the node's last attempt sent and their answers, in order (at most ${MAX_RECORDED_EXCHANGES}); absent when it sent none.`,
    },
  },
} as const;

export type Exchange = FromSchema<typeof exchangeSchema>;

export type Run = FromSchema<typeof runSchema>;

export type Step = FromSchema<typeof stepSchema>;

export type RunStatus = (typeof runStatuses)[number];

export type TerminalRunStatus = (typeof terminalRunStatuses)[number];

export type StepStatus = (typeof stepStatuses)[number];
