import { environmentNameSchema, flowSchema, flowVersionSchema } from '../../engine/model/index.ts';
import { authorize } from '../auth/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, fromRequest, pageQuerySchema, idParams } from '../route-kit/index.ts';

const base = '/api/v1/flows';
const versionSummary = {
  type: 'object',
  required: ['version', 'publishedAt'],
  properties: { version: { type: 'integer' }, publishedAt: { type: 'string', format: 'date-time' } },
} as const;

const promotionSchema = {
  type: 'object',
  required: ['key', 'from', 'to', 'dryRun'],
  properties: {
    key: { type: 'string' },
    from: {
      type: 'object',
      required: ['environment', 'version'],
      properties: { environment: { type: 'string' }, version: { type: 'integer' } },
    },
    to: {
      type: 'object',
      required: ['environment', 'version', 'change', 'diff'],
      properties: {
        environment: { type: 'string' },
        version: {
          type: ['integer', 'null'],
          description: "The target's version that runs the promoted document (null on a dry run that would make one).",
        },
        change: { enum: ['added', 'changed', 'unchanged'] },
        diff: {
          type: 'array',
          items: { type: 'string' },
          description: 'Against the version the target ran: one line per field, `~` changed, `+` added, `-` removed.',
        },
      },
    },
    dryRun: { type: 'boolean' },
  },
} as const;

export function flowRoutes({ flows, flowFiles }: ApiContext) {
  const setActive = (active: boolean) =>
    defineRoute({
      method: 'post',
      path: `${base}/{id}/${active ? 'activate' : 'deactivate'}`,
      tag: 'Flow',
      scope: 'flows:write',
      summary: active
        ? 'Activate: the flow URL (or schedule) starts runs of the active version'
        : 'Deactivate: the flow URL stops accepting messages and the schedule stops',
      params: idParams,
      responses: {
        200: { description: 'The flow.', schema: flowSchema },
        409: { description: 'The flow has no published version yet.' },
      },
      handle: async ({ tenantId, params }) => ({ body: await flows.setActive(tenantId, params.id, active) }),
    });

  return [
    defineRoute({
      method: 'post',
      path: `${base}/{id}/promote`,
      tag: 'Flow',
      scope: 'flows:write',
      summary: 'Promote a published version to another environment',
      description:
        "A version of the flow (its active one unless `version` says) becomes the running version of the flow with its key in `to` (created there the first time), from the environment the request is in. Refused (409), naming each field of the version's document that uses it, when `to` lacks a variable, secret, destination, action or failure flow the version uses; the answer shows the difference against what `to` ran. The token must grant `to` as well.",
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['to'],
        properties: {
          to: environmentNameSchema,
          version: {
            type: 'integer',
            minimum: 1,
            maximum: 2_147_483_647,
            description: 'The version to promote (the active one by default).',
          },
          dryRun: { type: 'boolean', default: false, description: 'Say what would change; change nothing.' },
        },
        examples: [{ to: 'production' }],
      },
      responses: {
        200: { description: 'What was promoted, and what changed in `to`.', schema: promotionSchema },
        409: { description: 'The flow has no published version, or `to` lacks what the version uses.' },
      },
      async handle({ tenant, environment, principal, params, body }) {
        authorize(principal, tenant, body.to, 'flows:write');
        return {
          body: await fromRequest('$.body', () =>
            flowFiles.promote(tenant, params.id, { from: environment, to: body.to }, body),
          ),
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: base,
      tag: 'Flow',
      scope: 'flows:read',
      summary: 'List published flows',
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: {
        200: { description: 'A page of flows that have at least one version.', schema: connectionSchema(flowSchema) },
      },
      handle: async ({ tenantId, query }) => ({ body: await flows.list(tenantId, { published: true }, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'Flow',
      scope: 'flows:read',
      summary: 'Get a published flow with its latest versions',
      params: idParams,
      responses: {
        200: {
          description: 'The flow; `versions` is the first page of its versions, newest first.',
          schema: {
            type: 'object',
            properties: { ...flowSchema.properties, versions: connectionSchema(versionSummary) },
          },
        },
      },
      async handle({ tenantId, params }) {
        const { versions, ...flow } = await flows.getPublished(tenantId, params.id);
        return {
          body: {
            ...flow,
            versions: {
              ...versions,
              nodes: versions.nodes.map(({ version, publishedAt }) => ({ version, publishedAt })),
            },
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}/versions`,
      tag: 'Flow',
      scope: 'flows:read',
      summary: 'List the versions of a flow, newest first',
      params: idParams,
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: 'A page of versions.', schema: connectionSchema(flowVersionSchema) } },
      handle: async ({ tenantId, params, query }) => ({
        body: await flows.listVersions(tenantId, params.id, query),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}/versions/{version}`,
      tag: 'Flow',
      scope: 'flows:read',
      summary: 'Get one immutable version',
      params: {
        type: 'object',
        required: ['id', 'version'],
        properties: { id: { type: 'string' }, version: { type: 'integer', minimum: 1 } },
      },
      responses: { 200: { description: 'The version.', schema: flowVersionSchema } },
      handle: async ({ tenantId, params }) => ({ body: await flows.getVersion(tenantId, params.id, params.version) }),
    }),
    setActive(true),
    setActive(false),
  ];
}
