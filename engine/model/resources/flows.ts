import type { FromSchema } from 'json-schema-to-ts';
import { flowDocumentSchema } from '../flow-document.ts';
import { timestamp, uuid, ownerSchema } from './common.ts';

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
    tenantId: ownerSchema,
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
    tenantId: ownerSchema,
    flowId: uuid,
    version: { type: 'integer' },
    document: flowDocumentSchema,
    publishedAt: timestamp,
  },
} as const;

export type Flow = FromSchema<typeof flowSchema>;

export type FlowVersion = FromSchema<typeof flowVersionSchema>;
