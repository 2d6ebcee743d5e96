import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, nullableTimestamp, uuid, errorRecordSchema, ownerSchema } from './common.ts';
import { runStatuses } from './runs.ts';

export const batchStatuses = ['importing', 'running', 'succeeded', 'failed'] as const;

export const batchCountsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['total', 'unfinished', 'succeeded', 'failed', 'skipped', 'progress'],
  properties: {
    total: { type: 'integer' },
    unfinished: { type: 'integer', description: 'Tasks queued, running or waiting.' },
    succeeded: { type: 'integer' },
    failed: { type: 'integer' },
    skipped: { type: 'integer', description: 'Tasks that ended skipped or filtered.' },
    progress: { type: 'number', description: 'Settled tasks in percent of all (100 when there are none).' },
  },
} as const;

export const batchSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'tenantId',
    'id',
    'flowId',
    'flowVersion',
    'runId',
    'nodeId',
    'status',
    'windowFrom',
    'windowTo',
    'counts',
    'startedAt',
    'finishedAt',
  ],
  description:
    'One poll of a flow: the items its fan-out node imported, each run as a task through the nodes after it.',
  properties: {
    tenantId: ownerSchema,
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    runId: { ...uuid, description: 'The run that imported the batch.' },
    nodeId: { type: 'string' },
    status: {
      enum: batchStatuses,
      description:
        'importing (pages are being read), running (all read, tasks unfinished), then succeeded or failed (some task ' +
        'or the import failed).',
    },
    windowFrom: nullableTimestamp,
    windowTo: nullableTimestamp,
    counts: batchCountsSchema,
    startedAt: timestamp,
    finishedAt: nullableTimestamp,
  },
} as const;

export const batchTaskSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['batchId', 'key', 'runId', 'status', 'error', 'retries'],
  properties: {
    batchId: uuid,
    key: { type: 'string', description: "The item's identity in the batch (for orders: the order id)." },
    runId: { ...uuid, description: "The task's latest run." },
    status: { enum: runStatuses },
    error: { anyOf: [errorRecordSchema, { type: 'null' }] },
    retries: { type: 'integer' },
  },
} as const;

export const incrementalFieldSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['flowId', 'field', 'value', 'movedAt', 'overlapMs', 'updatedAt'],
  description:
    "Where a flow's next poll starts: the field compared, its value, when it last moved, and how far before it the " +
    'poll re-reads.',
  properties: {
    flowId: uuid,
    field: { type: 'string' },
    value: nullableTimestamp,
    movedAt: nullableTimestamp,
    overlapMs: { type: 'integer', minimum: 0 },
    updatedAt: timestamp,
  },
} as const;

export type Batch = FromSchema<typeof batchSchema>;

export type BatchCounts = FromSchema<typeof batchCountsSchema>;

export type BatchStatus = (typeof batchStatuses)[number];

export type BatchTask = FromSchema<typeof batchTaskSchema>;

export type IncrementalField = FromSchema<typeof incrementalFieldSchema>;
