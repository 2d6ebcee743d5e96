import type { FromSchema } from 'json-schema-to-ts';
import { nullableTimestamp, timestamp, uuid } from './common.ts';

export const alertChannelTypes = ['webhook', 'slack'] as const;

/** Channels a tenant may have, and the channels one rule sends to. */
export const MAX_ALERT_CHANNELS = 20;
export const MAX_ALERT_RULES = 50;

const name = { type: 'string', minLength: 1, maxLength: 100 } as const;

/** Where a tenant's alerts go, as the API shows it: a Slack URL is a credential, so only its origin shows. */
export const alertChannelSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'type', 'url', 'createdAt'],
  properties: {
    id: uuid,
    name,
    type: {
      enum: alertChannelTypes,
      description:
        'webhook: a JSON alert, signed as Standard Webhooks sign (`webhook-id`, `webhook-timestamp`, ' +
        '`webhook-signature`: HMAC-SHA256 under the channel secret); slack: a Slack-style incoming webhook, ' +
        '`{"text": ...}` with a link to the run.',
    },
    url: {
      type: 'string',
      description: "The webhook's URL; for a Slack webhook (a credential), its origin only.",
    },
    createdAt: timestamp,
  },
} as const;

export const newAlertChannelSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'url'],
  properties: {
    name,
    type: alertChannelSchema.properties.type,
    url: {
      type: 'string',
      maxLength: 2000,
      pattern: '^https?://',
      description: 'Subject to the address policy of `http.request` (OUTBOUND_PRIVATE_ADDRESSES).',
    },
  },
  examples: [{ name: 'on-call', type: 'webhook', url: 'https://alerts.example.com/tributary' }],
} as const;

export const alertConditionKinds = ['run-failed', 'failure-rate', 'message-held'] as const;

const includeHandled = {
  type: 'boolean',
  description: 'Count runs that ended handled too (an error path or a loop went on past a failure); false when absent.',
} as const;

const flowIds = {
  type: 'array',
  items: uuid,
  minItems: 1,
  maxItems: 50,
  uniqueItems: true,
  description: 'Only these flows (all when absent).',
} as const;

/** What makes a rule fire. */
export const alertConditionSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind'],
      description: 'A run of a flow failed (or, with includeHandled, ended handled).',
      properties: { kind: { const: 'run-failed' }, flowIds, includeHandled },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'failures', 'windowSeconds'],
      description: 'At least `failures` runs failed within the last `windowSeconds`.',
      properties: {
        kind: { const: 'failure-rate' },
        flowIds,
        includeHandled,
        failures: { type: 'integer', minimum: 2, maximum: 100_000 },
        windowSeconds: { type: 'integer', minimum: 10, maximum: 86_400 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'olderThanSeconds'],
      description: 'A message has been held (tenant suspended, topic blocked) for longer than `olderThanSeconds`.',
      properties: {
        kind: { const: 'message-held' },
        olderThanSeconds: { type: 'integer', minimum: 1, maximum: 604_800 },
      },
    },
  ],
} as const;

const ruleFields = {
  name,
  enabled: { type: 'boolean', default: true },
  channelIds: {
    type: 'array',
    items: uuid,
    minItems: 1,
    maxItems: 5,
    uniqueItems: true,
    description: 'The channels it sends to.',
  },
  condition: alertConditionSchema,
  cooldownSeconds: {
    type: 'integer',
    minimum: 0,
    maximum: 86_400,
    default: 900,
    description:
      'At most one alert per this many seconds: what happens meanwhile is counted into the next one (0: none).',
  },
} as const;

export const newAlertRuleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'channelIds', 'condition'],
  properties: ruleFields,
  examples: [
    {
      name: 'refunds failing',
      channelIds: ['019a0000-0000-7000-8000-000000000001'],
      condition: { kind: 'run-failed', flowIds: ['019a0000-0000-7000-8000-000000000002'] },
      cooldownSeconds: 900,
    },
  ],
} as const;

export const alertRuleSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'name',
    'enabled',
    'channelIds',
    'condition',
    'cooldownSeconds',
    'createdAt',
    'checkedAt',
    'lastAlertAt',
  ],
  description:
    'When to alert and where. The workers check every enabled rule every few seconds; a run that failed is ' +
    'counted once, into one alert.',
  properties: {
    id: uuid,
    ...ruleFields,
    createdAt: timestamp,
    checkedAt: { ...nullableTimestamp, description: 'When the workers last checked it.' },
    lastAlertAt: nullableTimestamp,
  },
} as const;

export const alertDeliveryStatuses = ['pending', 'sent', 'failed'] as const;

/** One alert as sent: what it says, and its delivery to each channel. */
export const alertSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'ruleId', 'kind', 'count', 'text', 'sample', 'createdAt', 'deliveries'],
  properties: {
    id: { ...uuid, description: 'Also its `webhook-id`: a receiver that keeps the ids it has seen gets it once.' },
    ruleId: uuid,
    kind: { enum: alertConditionKinds },
    count: { type: 'integer', description: 'Runs failed, or messages held, that it reports.' },
    text: { type: 'string' },
    sample: {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['runId', 'flowId', 'flowKey'],
          properties: {
            runId: uuid,
            flowId: uuid,
            flowKey: { type: 'string' },
            errorKind: { type: 'string' },
            node: { type: 'string' },
          },
        },
        { type: 'null' },
      ],
      description: 'The latest run it reports (never its body, its error message or a secret).',
    },
    createdAt: timestamp,
    deliveries: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['channelId', 'status', 'attempts', 'lastError', 'sentAt'],
        properties: {
          channelId: uuid,
          status: {
            enum: alertDeliveryStatuses,
            description: 'pending: being sent or retried; failed: given up after 10 attempts.',
          },
          attempts: { type: 'integer' },
          lastError: { type: ['string', 'null'] },
          sentAt: nullableTimestamp,
        },
      },
    },
  },
} as const;

export type AlertChannel = FromSchema<typeof alertChannelSchema>;
export type NewAlertChannel = FromSchema<typeof newAlertChannelSchema>;
export type AlertCondition = FromSchema<typeof alertConditionSchema>;
export type AlertRule = FromSchema<typeof alertRuleSchema>;
export type NewAlertRule = FromSchema<typeof newAlertRuleSchema>;
export type Alert = FromSchema<typeof alertSchema>;
export type AlertChannelType = (typeof alertChannelTypes)[number];
