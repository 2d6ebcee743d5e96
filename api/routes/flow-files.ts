import { type FlowDocument, flowDocumentSchema, ValidationError } from '../../engine/model/index.ts';
import { FLOW_FILE_SUFFIX, MAX_PUSHED_FILES } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, fieldErrorSchema, fromRequest } from '../route-kit/index.ts';

const base = '/api/v1/flow-files';
const names = { type: 'array', items: { type: 'string' } } as const;

const flowFileSchema = {
  type: 'object',
  required: ['name', 'document', 'uses'],
  properties: {
    name: { type: 'string', description: `The file's name: the flow's key and ${FLOW_FILE_SUFFIX}.` },
    document: { ...flowDocumentSchema, description: "The flow's draft, every object's keys in order." },
    uses: {
      type: 'object',
      required: ['variables', 'secrets', 'destinations'],
      description: 'The names (never the values) of what the flow needs where it runs.',
      properties: { variables: names, secrets: names, destinations: names },
    },
  },
} as const;

/** How a push goes: in the body of a push of files, in the query of a PUT of one. */
const pushOptions = {
  publish: {
    type: 'boolean',
    default: false,
    description: 'Make each flow run its draft (a new version if needed).',
  },
  dryRun: { type: 'boolean', default: false, description: 'Say what would change; change nothing.' },
} as const;

const pushSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['files'],
  properties: {
    files: {
      type: 'array',
      maxItems: MAX_PUSHED_FILES,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'document'],
        properties: {
          name: { type: 'string', maxLength: 200, description: `<flow key>${FLOW_FILE_SUFFIX}` },
          document: { type: 'object', description: 'A flow document (FlowDocument).' },
        },
      },
    },
    ...pushOptions,
  },
} as const;

const pushResultSchema = {
  type: 'object',
  required: ['dryRun', 'changes', 'warnings'],
  properties: {
    dryRun: { type: 'boolean' },
    changes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'file', 'change', 'diff'],
        properties: {
          key: { type: 'string' },
          file: { type: 'string' },
          change: { enum: ['added', 'changed', 'unchanged'] },
          diff: { ...names, description: 'One line per field: `~` changed, `+` added, `-` removed, with its path.' },
          published: { type: 'integer', description: 'The version made active by this push.' },
        },
      },
    },
    warnings: { type: 'array', items: fieldErrorSchema },
  },
} as const;

/** Flows as files (`tributary flows pull|push`, CI jobs): the same documents as editable flows, by key. */
export function flowFileRoutes({ flowFiles }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: "Every flow's draft as a file",
      description: 'What `tributary flows pull` writes: one file per flow, by key, in a form that stays the same.',
      responses: {
        200: {
          description: 'The files, by name.',
          schema: {
            type: 'object',
            required: ['files'],
            properties: { files: { type: 'array', items: flowFileSchema } },
          },
        },
      },
      handle: async ({ tenantId }) => ({ body: { files: await flowFiles.pull(tenantId) } }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{key}`,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: "A flow's draft as a file",
      params: { type: 'object', required: ['key'], properties: { key: { type: 'string' } } },
      responses: { 200: { description: 'The file.', schema: flowFileSchema } },
      handle: async ({ tenantId, params }) => ({ body: await flowFiles.get(tenantId, params.key) }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{key}`,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: "Make a flow's draft this file, and publish it on request",
      description:
        "A push of one file (the body, a flow document whose key is the path's): checked as publishing checks a " +
        'draft, refused with every problem (`$.body...`) changing nothing, else written; the answer says what changed.',
      params: { type: 'object', required: ['key'], properties: { key: { type: 'string' } } },
      query: { type: 'object', additionalProperties: false, properties: pushOptions },
      body: { type: 'object', description: 'A flow document (FlowDocument).' },
      responses: { 200: { description: 'What changed, or would change.', schema: pushResultSchema } },
      async handle({ tenantId, params, query, body }) {
        const file = { name: `${params.key}${FLOW_FILE_SUFFIX}`, document: body as FlowDocument };
        try {
          return { body: await flowFiles.push(tenantId, [file], query) };
        } catch (error) {
          throw error instanceof ValidationError ? asBodyErrors(error, params.key) : error;
        }
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/push`,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: "Make the files' flows' drafts match them, and publish them on request",
      description:
        'What `tributary flows push` sends. Every file is checked first as publishing checks a draft; any problem ' +
        'is a 400 naming every one (`$.body.files[i]...`) and changes nothing. Flows without a file are left alone. ' +
        'Each change comes with the fields it changes.',
      body: pushSchema,
      responses: { 200: { description: 'What changed, or would change.', schema: pushResultSchema } },
      handle: async ({ tenantId, body }) => ({
        body: await fromRequest('$.body', () =>
          flowFiles.push(tenantId, body.files as Parameters<typeof flowFiles.push>[1], body),
        ),
      }),
    }),
  ];
}

/** A push's problems with its one file, as a PUT of the file names them: fields of the body, whose key is the path's. */
function asBodyErrors(error: ValidationError, key: string): ValidationError {
  return new ValidationError(
    error.message,
    error.errors.map((problem) =>
      problem.path === '$.files[0].name'
        ? { path: '$.body.key', message: `must be the flow's key in the path: ${key}` }
        : { ...problem, path: problem.path.replace(/^\$\.files\[0\]\.document/, '$.body') },
    ),
  );
}
