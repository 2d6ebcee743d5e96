import { flowDocumentSchema, flowSchema, flowVersionSchema, underPath } from '../../engine/model/index.ts';
import type { FlowReview } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import {
  connectionSchema,
  defineRoute,
  fieldErrorSchema,
  fromRequest,
  idParams,
  pageQuerySchema,
} from '../route-kit/index.ts';

const base = '/api/v1/editable-flows';

const publishedSchema = {
  ...flowVersionSchema,
  required: [...flowVersionSchema.required, 'warnings'],
  properties: { ...flowVersionSchema.properties, warnings: { type: 'array', items: fieldErrorSchema } },
} as const;

/** A review of a document given in the request, with paths from the request's root. */
const rootedAt = (prefix: string, { errors, warnings }: FlowReview): FlowReview => ({
  errors: underPath(errors, prefix),
  warnings: underPath(warnings, prefix),
});

export function editableFlowRoutes({ flows }: ApiContext) {
  return [
    defineRoute({
      method: 'post',
      path: base,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: 'Create a draft flow',
      description: 'The body is a flow document. It is validated as on publish; every error names its node and field.',
      body: flowDocumentSchema,
      responses: {
        201: { description: 'The new flow, with its draft.', schema: flowSchema },
        409: { description: 'A flow with this key exists already.' },
      },
      async handle({ tenantId, body }) {
        const flow = await fromRequest('$.body', () => flows.create(tenantId, body));
        return { status: 201, body: flow, headers: { Location: `${base}/${flow.id}` } };
      },
    }),
    defineRoute({
      method: 'get',
      path: base,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: 'List flows with their drafts',
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: 'A page of flows.', schema: connectionSchema(flowSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await flows.list(tenantId, {}, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: 'Get a flow and its draft',
      params: idParams,
      responses: { 200: { description: 'The flow.', schema: flowSchema } },
      handle: async ({ tenantId, params }) => ({ body: await flows.get(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{id}`,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: 'Replace the draft',
      description:
        'Send the revision you read: if the draft changed since, the answer is 409 and nothing is written. The key ' +
        'cannot change.',
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['revision', 'document'],
        properties: { revision: { type: 'integer', minimum: 1 }, document: flowDocumentSchema },
      },
      responses: {
        200: { description: 'The flow with its new draft and revision.', schema: flowSchema },
        409: { description: 'The draft changed since that revision, or the key would change.' },
      },
      handle: async ({ tenantId, params, body }) => ({
        body: await fromRequest('$.body.document', () =>
          flows.replaceDraft(tenantId, params.id, body.revision, body.document),
        ),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{id}`,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: 'Delete a flow, its draft and its versions (its runs stay in the history)',
      params: idParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        await flows.delete(tenantId, params.id);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/validate`,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: 'Validate the draft, or the document in the body, as publishing would',
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: { document: { type: 'object' } },
        examples: [{ document: flowDocumentSchema.examples[0] }],
      },
      responses: {
        200: {
          description:
            'Whether it can be published, every problem, and warnings: the variables, secrets and platform values it ' +
            'reads that are not set now (a run would fail on them).',
          schema: {
            type: 'object',
            required: ['valid', 'errors', 'warnings'],
            properties: {
              valid: { type: 'boolean' },
              errors: { type: 'array', items: fieldErrorSchema },
              warnings: { type: 'array', items: fieldErrorSchema },
            },
          },
        },
      },
      async handle({ tenantId, params, body }) {
        const { errors, warnings } = body.document
          ? rootedAt('$.body.document', await flows.review(tenantId, body.document))
          : await flows.reviewDraft(tenantId, params.id);
        return { body: { valid: errors.length === 0, errors, warnings } };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/publish`,
      tag: 'EditableFlow',
      scope: 'flows:write',
      summary: 'Publish the draft as a new immutable version and make it the active one',
      description:
        'With `revision`, publishing fails with 409 if the draft changed since you read it. Each node that names no ' +
        "`operationVersion` is pinned to its operation's newest major.",
      params: idParams,
      body: { type: 'object', additionalProperties: false, properties: { revision: { type: 'integer', minimum: 1 } } },
      responses: {
        201: {
          description:
            'The new version, with `warnings`: the variables, secrets and platform values it reads that are not set now.',
          schema: publishedSchema,
        },
        409: { description: 'The draft changed since that revision.' },
      },
      async handle({ tenantId, params, body }) {
        const version = await flows.publish(tenantId, params.id, body.revision);
        return {
          status: 201,
          body: version,
          headers: { Location: `/api/v1/flows/${params.id}/versions/${version.version}` },
        };
      },
    }),
  ];
}
