import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, uuid } from './common.ts';

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

export type RunLog = FromSchema<typeof runLogSchema>;

export type LogLevel = (typeof logLevels)[number];
