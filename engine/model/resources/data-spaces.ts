import type { FromSchema } from 'json-schema-to-ts';
import { timestamp } from './common.ts';

export const dataSpaceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'documents', 'createdAt'],
  description:
    'A named collection of JSON documents (e.g. a SKU mapping): flows read it with $document(space, key) and write it ' +
    'with dataspace.put.',
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

export type DataSpace = FromSchema<typeof dataSpaceSchema>;

export type DataDocument = FromSchema<typeof dataDocumentSchema>;
