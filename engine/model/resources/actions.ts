import type { FromSchema } from 'json-schema-to-ts';
import { timestamp } from './common.ts';

export const tenantActionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'version', 'description', 'expression', 'inputSchema', 'outputSchema', 'createdAt'],
  description:
    'A tenant-defined action: a named, versioned JSONata transform of its input, usable as a node ("operation": ' +
    '"action:<name>").',
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
    'kind',
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
    kind: {
      enum: ['operation', 'node'],
      description:
        'operation: a registered plugin; node: a kind of node the engine runs itself (loop, wait, call, reply), ' +
        "its version the product's.",
    },
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

export type TenantAction = FromSchema<typeof tenantActionSchema>;

export type OperationInfo = FromSchema<typeof operationInfoSchema>;
