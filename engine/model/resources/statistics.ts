import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, uuid } from './common.ts';

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
    'Runs and messages per time bucket (UTC), for the runs and messages created in [from, to): whole buckets, the ' +
    'asked range widened to them. Test runs are never counted.',
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
          durationMs: {
            ...percentiles,
            description: 'Of finished runs: from first start (a run that never started: from its creation) to finish.',
          },
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

export type Statistics = FromSchema<typeof statisticsSchema>;
