/** Path parameters and answer shapes several routes share. */

/** A resource addressed by its id. */
export const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;

/** A problem of a document, or a warning about it: the path of its field, and the node it is in. */
export const fieldErrorSchema = {
  type: 'object',
  required: ['path', 'message'],
  properties: { path: { type: 'string' }, message: { type: 'string' }, node: { type: 'string' } },
} as const;

/** What became of held messages, and how to choose it: where a tenant resumes or a topic is unblocked. */
export const heldOutcomeSchema = {
  type: 'object',
  required: ['released', 'discarded'],
  properties: {
    released: { type: 'integer', description: 'Held messages now queued, in arrival order.' },
    discarded: { type: 'integer' },
  },
} as const;
export const heldChoice = {
  enum: ['release', 'discard', 'keep'],
  default: 'release',
  description:
    'What becomes of the held messages: run them in arrival order, discard them, or keep them held (to release or ' +
    'discard later).',
} as const;
