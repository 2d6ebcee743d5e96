import { problemCatalog } from '../http/index.ts';

/** The Problem schema of every error answer (RFC 9457), its `type` one of the catalog. */
export const problemSchema = {
  type: 'object',
  description: 'RFC 9457 problem details. Validation failures list each bad field with its JSON path.',
  required: ['type', 'title', 'status'],
  properties: {
    type: {
      type: 'string',
      enum: problemCatalog.map((problem) => problem.uri),
      description:
        'The kind of problem, stable: branch on it. A URI relative to the server, the entry of the kind in /docs: ' +
        problemCatalog.map((problem) => `${problem.kind} (${problem.status})`).join(', '),
    },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string' }, message: { type: 'string' }, node: { type: 'string' } },
      },
    },
  },
};

/** An error answer: a problem. */
export const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
/** A 429 or a 503, with the Retry-After header it always carries. */
export const retryLater = (description: string) => ({
  ...problem(description),
  headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } },
});
/** A JSON body of this schema. */
export const json = (schema: object) => ({ 'application/json': { schema } });
