import type { FromSchema } from 'json-schema-to-ts';
import { flowDocumentSchema } from './flow/schema.ts';

/**
 * One JSON Schema per resource: the TypeScript record types below are derived from them, the API
 * validates with them, and the OpenAPI document publishes them.
 */
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;

export const errorRecordSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'message'],
  properties: {
    kind: {
      enum: ['retryable', 'permanent', 'later'],
      description: 'retryable: transient; permanent: retrying cannot help; later: not yet.',
    },
    message: { type: 'string' },
    details: { type: 'object' },
    node: { type: 'string', description: 'The node that failed.' },
  },
} as const;

export const tenantSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'status', 'suspendedReason', 'suspendedAt', 'createdAt'],
  properties: {
    id: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' },
    name: { type: 'string' },
    status: {
      enum: ['active', 'suspended'],
      description: "A suspended tenant's API calls get 403; its flow URLs record messages but start no runs.",
    },
    suspendedReason: { type: ['string', 'null'] },
    suspendedAt: nullableTimestamp,
    createdAt: timestamp,
  },
} as const;

export const flowSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'tenantId',
    'id',
    'key',
    'name',
    'draft',
    'revision',
    'activeVersion',
    'latestVersion',
    'active',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    tenantId: { type: 'string' },
    id: uuid,
    key: { type: 'string' },
    name: { type: 'string' },
    draft: flowDocumentSchema,
    revision: {
      type: 'integer',
      description: 'Bumped on every draft change; send it back to replace or publish (optimistic concurrency).',
    },
    activeVersion: { type: ['integer', 'null'], description: 'The published version its URL runs, if any.' },
    latestVersion: { type: ['integer', 'null'] },
    active: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

export const flowVersionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tenantId', 'flowId', 'version', 'document', 'publishedAt'],
  properties: {
    tenantId: { type: 'string' },
    flowId: uuid,
    version: { type: 'integer' },
    document: flowDocumentSchema,
    publishedAt: timestamp,
  },
} as const;

export const variableSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'value', 'createdAt', 'updatedAt'],
  properties: { name: { type: 'string' }, value: {}, createdAt: timestamp, updatedAt: timestamp },
} as const;

export const secretInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'keyId', 'fingerprint', 'createdAt', 'updatedAt'],
  description: 'A secret as the API shows it: never its value.',
  properties: {
    name: { type: 'string' },
    keyId: { type: 'string', description: 'Id of the key that sealed the value.' },
    fingerprint: { type: 'string', description: 'Keyed digest: equal values have equal fingerprints.' },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

export const messageSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'tenantId',
    'id',
    'flowId',
    'flowVersion',
    'deliveryId',
    'topic',
    'body',
    'headers',
    'query',
    'receivedAt',
  ],
  properties: {
    tenantId: { type: 'string' },
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    deliveryId: { type: ['string', 'null'] },
    topic: {
      type: ['string', 'null'],
      description:
        "What the sender says the message is about (its family's topic header, X-Topic or X-Event-Type); `schedule` for a tick, `poll` for a batch item.",
    },
    body: {},
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    query: { type: 'object' },
    receivedAt: timestamp,
  },
} as const;

/** What became of a message: from its latest run, or `duplicate` for a repeated delivery (which has none). */
export const messageStatuses = [
  'accepted',
  'duplicate',
  'blocked',
  'running',
  'succeeded',
  'failed',
  'skipped',
] as const;

/** Why a run waits without a job: its tenant is suspended, or its message's topic is blocked. */
export const holdReasons = ['suspended', 'topic'] as const;

export const runStatuses = [
  'held',
  'queued',
  'running',
  'waiting',
  'succeeded',
  'failed',
  'filtered',
  'skipped',
  'cancelled',
] as const;
export const terminalRunStatuses = ['succeeded', 'failed', 'filtered', 'skipped', 'cancelled'] as const;
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
  ],
  properties: {
    tenantId: { type: 'string' },
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    messageId: uuid,
    status: {
      enum: runStatuses,
      description: 'held: recorded but not queued (tenant suspended or topic blocked) until released or discarded.',
    },
    heldBy: { anyOf: [{ enum: holdReasons }, { type: 'null' }], description: 'Why a held run is held.' },
    attempts: { type: 'integer', description: 'How many times a worker took the run up.' },
    error: { anyOf: [errorRecordSchema, { type: 'null' }] },
    createdAt: timestamp,
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    batchId: { anyOf: [uuid, { type: 'null' }], description: 'Set on a batch task: the batch it belongs to.' },
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
  },
} as const;

/** A destination as the API shows it: its settings, and which credentials are set — never their values. */
export const destinationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'settings', 'credentialsSet', 'createdAt', 'updatedAt'],
  properties: {
    name: { type: 'string' },
    type: { type: 'string', description: 'A destination type an operation family declares (the PUT body lists them).' },
    settings: { type: 'object', description: 'The non-secret part of the configuration, as it was given.' },
    credentialsSet: {
      type: 'array',
      items: { type: 'string' },
      description: 'JSON paths of the credential fields that hold a value.',
    },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

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
    tenantId: { type: 'string' },
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    runId: { ...uuid, description: 'The run that imported the batch.' },
    nodeId: { type: 'string' },
    status: {
      enum: batchStatuses,
      description:
        'importing (pages are being read), running (all read, tasks unfinished), then succeeded or failed (some task or the import failed).',
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
    key: { type: 'string', description: "The item's identity in the batch (for orders: id and updatedAt)." },
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
    "Where a flow's next poll starts: the field compared, its value, when it last moved, and how far before it the poll re-reads.",
  properties: {
    flowId: uuid,
    field: { type: 'string' },
    value: nullableTimestamp,
    movedAt: nullableTimestamp,
    overlapMs: { type: 'integer', minimum: 0 },
    updatedAt: timestamp,
  },
} as const;

/** A message as the MessageInfo API shows it: headers as kept (secrets never are), body capped. */
export const messageInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'flowId',
    'flowVersion',
    'deliveryId',
    'topic',
    'status',
    'duplicateOf',
    'headers',
    'query',
    'body',
    'bodyBytes',
    'bodyTruncated',
    'receivedAt',
    'runId',
  ],
  properties: {
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    deliveryId: { type: ['string', 'null'] },
    topic: { type: ['string', 'null'] },
    status: { enum: messageStatuses },
    duplicateOf: {
      anyOf: [uuid, { type: 'null' }],
      description: 'For a repeated delivery: the first message with its delivery id.',
    },
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'The headers kept (signatures and credentials are not).',
    },
    query: { type: 'object' },
    body: { description: 'The body, or null when it is over the size cap (see bodyTruncated).' },
    bodyBytes: { type: 'integer' },
    bodyTruncated: { type: 'boolean' },
    receivedAt: timestamp,
    runId: { anyOf: [uuid, { type: 'null' }], description: 'Its latest run.' },
  },
} as const;

export const blockedTopicSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['topic', 'reason', 'blockedAt', 'held'],
  description: 'Deliveries of a blocked topic are verified, recorded and answered 2xx, but not run until released.',
  properties: {
    topic: { type: 'string' },
    reason: { type: ['string', 'null'] },
    blockedAt: timestamp,
    held: { type: 'integer', description: 'Messages of the topic held so far.' },
  },
} as const;

const percentiles = {
  anyOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['p50', 'p95', 'p99'],
      properties: { p50: { type: 'number' }, p95: { type: 'number' }, p99: { type: 'number' } },
    },
    { type: 'null' },
  ],
} as const;

export const statisticsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to', 'interval', 'runs', 'messages'],
  description:
    'Runs and messages per time bucket (UTC), for the runs and messages created in [from, to). Test runs are never counted.',
  properties: {
    from: timestamp,
    to: timestamp,
    interval: { enum: ['hour', 'day'] },
    runs: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['bucket', 'flowId', 'total', 'counts', 'durationMs', 'latencyMs'],
        properties: {
          bucket: timestamp,
          flowId: uuid,
          total: { type: 'integer' },
          counts: { type: 'object', additionalProperties: { type: 'integer' }, description: 'Runs per status.' },
          durationMs: { ...percentiles, description: 'Of finished runs: from first start to finish.' },
          latencyMs: { ...percentiles, description: "Of finished runs: from the message's arrival to finish." },
        },
      },
    },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['bucket', 'topic', 'count', 'duplicates'],
        properties: {
          bucket: timestamp,
          topic: { type: ['string', 'null'] },
          count: { type: 'integer' },
          duplicates: { type: 'integer' },
        },
      },
    },
  },
} as const;

export const userSettingsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['subject', 'settings', 'updatedAt'],
  properties: {
    subject: {
      type: 'string',
      description: "The token's subject (a client id, or a user of an external identity provider).",
    },
    settings: {
      type: 'object',
      additionalProperties: false,
      required: ['timezone', 'locale', 'pageSize'],
      properties: {
        timezone: {
          type: 'string',
          minLength: 1,
          maxLength: 64,
          default: 'UTC',
          description: 'An IANA time zone, e.g. Europe/Berlin.',
        },
        locale: {
          type: 'string',
          pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
          default: 'en-US',
          description: 'A BCP 47 language tag.',
        },
        pageSize: {
          type: 'integer',
          minimum: 1,
          maximum: 200,
          default: 50,
          description: 'Default page size of lists in a UI.',
        },
      },
    },
    updatedAt: nullableTimestamp,
  },
} as const;

export const dataSpaceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'documents', 'createdAt'],
  description:
    'A named collection of JSON documents (e.g. a SKU mapping): flows read it with $lookup(space, key) and write it with dataspace.put.',
  properties: {
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    documents: { type: 'integer' },
    createdAt: timestamp,
  },
} as const;

export const dataDocumentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'value', 'createdAt', 'updatedAt'],
  properties: { key: { type: 'string' }, value: {}, createdAt: timestamp, updatedAt: timestamp },
} as const;

export const logLevels = ['info', 'warn', 'error', 'fatal'] as const;

export const runLogSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'flowId', 'runId', 'nodeId', 'level', 'message', 'data', 'loggedAt'],
  description: 'A line an operation logged during a run (info and above; secrets redacted).',
  properties: {
    id: { type: 'string' },
    flowId: uuid,
    runId: uuid,
    nodeId: { type: 'string' },
    level: { enum: logLevels },
    message: { type: 'string' },
    data: { description: 'The object logged with the message, if any.' },
    loggedAt: timestamp,
  },
} as const;

export const tenantActionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'version', 'description', 'expression', 'inputSchema', 'outputSchema', 'createdAt'],
  description:
    'A tenant-defined action: a named, versioned JSONata transform of its input, usable as a node ("operation": "action:<name>").',
  properties: {
    name: { type: 'string' },
    version: { type: 'integer', description: 'Each save is a new, immutable version.' },
    description: { type: ['string', 'null'] },
    expression: { type: 'string', description: 'JSONata over the input (the context, also $input).' },
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    createdAt: timestamp,
  },
} as const;

/** What a builder UI needs to render an operation: the metadata of its definition. */
export const operationInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'name',
    'version',
    'title',
    'description',
    'configSchema',
    'deprecated',
    'successor',
    'sideEffects',
    'fanOut',
  ],
  properties: {
    name: { type: 'string', description: 'What a node names in `operation`.' },
    version: { type: 'string', description: 'Semantic version of its behaviour and config.' },
    title: { type: 'string' },
    description: { type: 'string' },
    configSchema: { type: 'object', description: "The JSON Schema a node's config is validated with." },
    deprecated: { type: 'boolean' },
    successor: { type: ['string', 'null'], description: 'The operation to use instead, when deprecated.' },
    sideEffects: { type: 'boolean', description: 'Whether running it changes an outside system.' },
    fanOut: { type: 'boolean', description: 'Whether its items run the following nodes as batch tasks.' },
  },
} as const;

export type ErrorRecord = FromSchema<typeof errorRecordSchema>;
export type OperationInfo = FromSchema<typeof operationInfoSchema>;
export type Batch = FromSchema<typeof batchSchema>;
export type BatchCounts = FromSchema<typeof batchCountsSchema>;
export type BatchStatus = (typeof batchStatuses)[number];
export type BatchTask = FromSchema<typeof batchTaskSchema>;
export type IncrementalField = FromSchema<typeof incrementalFieldSchema>;
export type Destination = FromSchema<typeof destinationSchema>;
export type Tenant = FromSchema<typeof tenantSchema>;
export type Flow = FromSchema<typeof flowSchema>;
export type FlowVersion = FromSchema<typeof flowVersionSchema>;
export type Variable = FromSchema<typeof variableSchema>;
export type SecretInfo = FromSchema<typeof secretInfoSchema>;
export type Message = FromSchema<typeof messageSchema>;
export type MessageInfo = FromSchema<typeof messageInfoSchema>;
export type MessageStatus = (typeof messageStatuses)[number];
export type HoldReason = (typeof holdReasons)[number];
export type BlockedTopic = FromSchema<typeof blockedTopicSchema>;
export type Statistics = FromSchema<typeof statisticsSchema>;
export type DataSpace = FromSchema<typeof dataSpaceSchema>;
export type RunLog = FromSchema<typeof runLogSchema>;
export type TenantAction = FromSchema<typeof tenantActionSchema>;
export type LogLevel = (typeof logLevels)[number];
export type DataDocument = FromSchema<typeof dataDocumentSchema>;
export type UserSettings = FromSchema<typeof userSettingsSchema>;
export type Run = FromSchema<typeof runSchema>;
export type Step = FromSchema<typeof stepSchema>;
export type RunStatus = (typeof runStatuses)[number];
export type TerminalRunStatus = (typeof terminalRunStatuses)[number];
export type StepStatus = (typeof stepStatuses)[number];

/** The resources the OpenAPI document publishes under components.schemas. */
export const resourceSchemas = {
  FlowDocument: flowDocumentSchema,
  Flow: flowSchema,
  FlowVersion: flowVersionSchema,
  Variable: variableSchema,
  SecretInfo: secretInfoSchema,
  Message: messageSchema,
  MessageInfo: messageInfoSchema,
  BlockedTopic: blockedTopicSchema,
  Statistics: statisticsSchema,
  DataSpace: dataSpaceSchema,
  RunLog: runLogSchema,
  TenantAction: tenantActionSchema,
  DataDocument: dataDocumentSchema,
  UserSettings: userSettingsSchema,
  Run: runSchema,
  Step: stepSchema,
  ErrorRecord: errorRecordSchema,
  Tenant: tenantSchema,
  Destination: destinationSchema,
  Batch: batchSchema,
  BatchTask: batchTaskSchema,
  IncrementalField: incrementalFieldSchema,
  OperationInfo: operationInfoSchema,
};

/** The status enums of the resources, as the Metadata API lists them. */
export const statusEnums = { runStatuses, stepStatuses, batchStatuses, messageStatuses };
