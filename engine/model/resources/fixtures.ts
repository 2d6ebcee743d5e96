import type { FromSchema } from 'json-schema-to-ts';
import { exchangeSchema, stepStatuses, terminalRunStatuses } from './runs.ts';

const expectedStepSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: {
    status: { enum: stepStatuses },
    output: { description: 'What the node gave (a succeeded step).' },
    error: { type: 'string', description: "The error's message (a failed step)." },
  },
} as const;

/**
 * A test recorded from a run (decision 29): the message, the requests its nodes sent with their answers, and what
 * each node gave. A person may edit it: change the message, expect a failure, mark fields volatile.
 */
export const fixtureSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['flow', 'message', 'exchanges', 'expect'],
  properties: {
    flow: { type: 'string', description: "The flow's key: its draft (or a file given with the test) runs it." },
    recordedFrom: {
      type: 'object',
      description: 'The run it was recorded from.',
      properties: {
        runId: { type: 'string' },
        flowVersion: { type: 'integer' },
        recordedAt: { type: 'string', format: 'date-time' },
      },
    },
    message: {
      type: 'object',
      additionalProperties: false,
      required: ['body'],
      properties: {
        body: { description: "The message's body." },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        query: { type: 'object' },
      },
    },
    exchanges: {
      type: 'array',
      maxItems: 5000,
      description: 'Each request a node sent and its answer, in order; `step` names the node (or sub-step).',
      items: {
        type: 'object',
        required: ['step', ...exchangeSchema.required],
        properties: { step: { type: 'string' }, ...exchangeSchema.properties },
      },
    },
    expect: {
      type: 'object',
      additionalProperties: false,
      required: ['status', 'steps'],
      properties: {
        status: { enum: [...terminalRunStatuses, 'waiting'] },
        steps: {
          type: 'object',
          additionalProperties: expectedStepSchema,
          description: 'Each step, by key, as the recorded run ended it.',
        },
      },
    },
    volatile: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      description:
        'Per step, the paths in its output not compared (`{"send": ["$.body.createdAt"]}`): a timestamp, an id the ' +
        'outside system makes.',
    },
  },
} as const;

export type Fixture = FromSchema<typeof fixtureSchema>;
