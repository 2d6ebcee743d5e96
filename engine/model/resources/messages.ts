import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, uuid, ownerSchema } from './common.ts';
import { type holdReasons, terminalRunStatuses } from './runs.ts';

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
    tenantId: ownerSchema,
    id: uuid,
    flowId: uuid,
    flowVersion: { type: 'integer' },
    deliveryId: { type: ['string', 'null'] },
    topic: {
      type: ['string', 'null'],
      description:
        "What the sender says the message is about (its family's topic header, X-Topic or X-Event-Type); `schedule` " +
        'for a tick, `poll` for a batch item.',
    },
    body: {},
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    query: { type: 'object' },
    receivedAt: timestamp,
  },
} as const;

/**
 * What became of a message: from its latest run (a finished run's own status: one word for one
 * outcome), or `duplicate` for a repeated delivery (which has none).
 */
export const messageStatuses = ['accepted', 'duplicate', 'blocked', 'running', ...terminalRunStatuses] as const;

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

export type Message = FromSchema<typeof messageSchema>;

export type MessageInfo = FromSchema<typeof messageInfoSchema>;

export type MessageStatus = (typeof messageStatuses)[number];

export type HoldReason = (typeof holdReasons)[number];

export type BlockedTopic = FromSchema<typeof blockedTopicSchema>;
