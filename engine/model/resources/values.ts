import type { FromSchema } from 'json-schema-to-ts';
import { timestamp } from './common.ts';

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

export type Variable = FromSchema<typeof variableSchema>;

export type SecretInfo = FromSchema<typeof secretInfoSchema>;
