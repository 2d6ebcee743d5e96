import type { FromSchema } from 'json-schema-to-ts';
import { timestamp } from './common.ts';

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

export type Destination = FromSchema<typeof destinationSchema>;
