import type { FromSchema } from 'json-schema-to-ts';

export const timestamp = { type: 'string', format: 'date-time' } as const;

/** Whose record it is, and in which of its environments (decision 28). */
export const ownerSchema = {
  type: 'string',
  description: "The tenant's id, followed by `~` and the environment's name outside production (`acme~staging`).",
} as const;

export const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

export const uuid = { type: 'string', format: 'uuid' } as const;

export const errorRecordSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'message'],
  properties: {
    kind: {
      enum: ['retryable', 'permanent', 'later'],
      description: 'retryable: transient; permanent: retrying cannot help; later: not yet.',
    },
    message: { type: 'string' },
    details: { type: 'object' },
    node: { type: 'string', description: 'The node that failed.' },
    failures: {
      type: 'integer',
      minimum: 1,
      description:
        "On a handled run's error: how many failures the run went on past (nodes an error path took, loop items " +
        'that failed), this one the first.',
    },
  },
} as const;

export type ErrorRecord = FromSchema<typeof errorRecordSchema>;
