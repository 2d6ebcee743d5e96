import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, nullableTimestamp, uuid } from './common.ts';

export const replayStatuses = ['running', 'finished', 'cancelled'] as const;

/** Most messages a replay starts runs for in a second, and the rate when none is asked. */
export const MAX_REPLAY_RATE = 100;
export const DEFAULT_REPLAY_RATE = 10;
/** A bulk replay's runs wait behind the tenant's others unless it asks (flowControl.priority: 1 first). */
export const LOWEST_PRIORITY = 5;
/** Replays one tenant may have running at once: the workers take due replays in turn, across tenants. */
export const MAX_RUNNING_REPLAYS = 5;
/**
 * A replay's matches are counted up to this many: a count past it says "at least". Counting reads each match's run
 * (about 4 µs): a thousand keeps a dry run within a few ms however many match (10,000 took 25 ms).
 */
export const REPLAY_COUNT_LIMIT = 1_000;

export const REDO_COMPLETED_STEPS =
  'Run again the steps the replayed run completed too. When false (the default), a replay on the same flow version ' +
  'carries them over and goes on from where the run failed: nothing it sent is sent again.';

/** Which messages a bulk replay runs again: those whose latest run ended so, and matches the rest. */
export const replayFilterSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    flowId: { ...uuid, description: 'Only the messages of this flow.' },
    status: {
      enum: ['failed', 'handled'],
      default: 'failed',
      description: "The latest run's status: failed, or handled (failed, and its error path ran).",
    },
    errorKind: {
      enum: ['retryable', 'permanent', 'later'],
      description: "Only runs whose error is of this kind (the run's `error.kind`).",
    },
    receivedFrom: { ...timestamp, description: 'Messages received at or after this time.' },
    receivedTo: { ...timestamp, description: 'Messages received before this time.' },
    batchId: {
      ...uuid,
      description:
        "The failed tasks of this batch (a fan-out's), tried again as the batch's retry does, in its order: with " +
        '`errorKind` only (status `failed`).',
    },
    includeCalls: {
      type: 'boolean',
      description:
        "Also the messages of flows' calls (a call node's run of another flow): left to their callers when absent.",
    },
  },
  examples: [
    {
      flowId: '019a0000-0000-7000-8000-000000000001',
      status: 'failed',
      errorKind: 'permanent',
      receivedFrom: '2026-01-31T00:00:00.000Z',
    },
  ],
} as const;

export const replaySchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'filter',
    'ratePerSecond',
    'redoCompletedSteps',
    'priority',
    'status',
    'total',
    'totalExact',
    'replayed',
    'skipped',
    'createdAt',
    'finishedAt',
  ],
  description:
    "A bulk replay: a new run, on the flow's active version, for each message the filter matched when it was made, " +
    'started at most `ratePerSecond` a second by the workers. Each new run names the run it replays (`replayOf`).',
  properties: {
    id: uuid,
    filter: replayFilterSchema,
    ratePerSecond: { type: 'integer', minimum: 1, maximum: MAX_REPLAY_RATE },
    redoCompletedSteps: { type: 'boolean', description: REDO_COMPLETED_STEPS },
    priority: { type: 'integer', minimum: 1, maximum: 5, description: "Of its runs among the tenant's waiting runs." },
    status: {
      enum: replayStatuses,
      description: 'running: runs are being started; finished: every match was seen; cancelled: stopped by a caller.',
    },
    total: {
      type: 'integer',
      description:
        `Messages the filter matched when the replay was made, counted up to ${REPLAY_COUNT_LIMIT}; finished, ` +
        'with what failed since among the runs it looked at: then `replayed` and `skipped` add up to it.',
    },
    totalExact: {
      type: 'boolean',
      description: `false: at least \`total\` matched (counting stops at ${REPLAY_COUNT_LIMIT}); all are replayed.`,
    },
    replayed: { type: 'integer', description: 'New runs started so far.' },
    skipped: {
      type: 'integer',
      description:
        "Matches not run again: the flow has no active version, or the message's latest run changed (another " +
        'replay or retry took it).',
    },
    createdAt: timestamp,
    finishedAt: nullableTimestamp,
  },
} as const;

export type ReplayFilter = FromSchema<typeof replayFilterSchema>;
export type Replay = FromSchema<typeof replaySchema>;
export type ReplayStatus = (typeof replayStatuses)[number];
