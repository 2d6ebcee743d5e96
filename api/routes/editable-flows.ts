import {
  NotFoundError,
  ValidationError,
  type FieldError,
  flowDocumentSchema,
  type FlowDocument,
  newId,
  flowSchema,
  flowVersionSchema,
} from '../../engine/model/index.ts';
import { ACTION_PREFIX } from '../../engine/plugins/index.ts';
import {
  missingValueWarnings,
  type NamesByKind,
  pinOperationVersions,
  reviewFlow,
  validateFlow,
  type VariableRead,
} from '../../engine/flow/index.ts';
import { activeVersionChanged, type ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route.ts';

const base = '/api/v1/editable-flows';
/** How many names of each kind a warning's "did you mean" looks among. */
const SUGGESTION_CANDIDATES = 200;
export const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;
const fieldErrorSchema = {
  type: 'object',
  required: ['path', 'message'],
  properties: { path: { type: 'string' }, message: { type: 'string' }, node: { type: 'string' } },
} as const;

const publishedSchema = {
  ...flowVersionSchema,
  required: [...flowVersionSchema.required, 'warnings'],
  properties: { ...flowVersionSchema.properties, warnings: { type: 'array', items: fieldErrorSchema } },
} as const;

/** A document's field errors (`$.nodes[0]...`) as paths of where the document sits (`$.draft.nodes[0]...`). */
export const underPath = (errors: FieldError[], prefix: string): FieldError[] =>
  errors.map((error) => ({ ...error, path: prefix + error.path.slice(1) }));

export function editableFlowRoutes(context: ApiContext) {
  const { store, compile } = context;
  /** Every problem of a document, with paths from the request body's root. */
  const check = (document: unknown, prefix: string): FieldError[] => underPath(validateFlow(document, compile), prefix);
  const assertValid = (document: unknown, prefix: string) => {
    const errors = check(document, prefix);
    if (errors.length > 0) throw new ValidationError('The flow document is not valid', errors);
  };
  /**
   * What publishing checks: the document, and that every `action:<name>` node names an action (and version) the
   * tenant has; and, as warnings, the variables, secrets and platform values it reads that do not exist now.
   */
  const review = async (
    tenantId: string,
    document: unknown,
    prefix: string,
  ): Promise<{ errors: FieldError[]; warnings: FieldError[] }> => {
    const reviewed = reviewFlow(document, compile);
    const errors = underPath(reviewed.errors, prefix);
    const warnings = underPath(
      [...(await missingValues(tenantId, reviewed.reads)), ...(await missingFailureFlow(tenantId, document))],
      prefix,
    );
    if (errors.length > 0) return { errors, warnings };
    for (const [index, node] of (document as FlowDocument).nodes.entries()) {
      if (!node.operation.startsWith(ACTION_PREFIX)) continue;
      const version = (node.config as { version?: unknown } | undefined)?.version;
      const name = node.operation.slice(ACTION_PREFIX.length);
      if (!(await store.getAction(tenantId, name, typeof version === 'number' ? version : undefined))) {
        errors.push({
          path: `${prefix}.nodes[${index}].operation`,
          message: `names no action of this tenant: ${name}${typeof version === 'number' ? ` v${version}` : ''}`,
          node: node.id,
        });
      }
    }
    return { errors, warnings };
  };
  const missingFailureFlow = async (tenantId: string, document: unknown): Promise<FieldError[]> => {
    const key = (document as { failureFlow?: unknown } | null)?.failureFlow;
    if (typeof key !== 'string') return [];
    const flow = await store.findFlowByKey(tenantId, key);
    return flow?.active && flow.activeVersion !== null
      ? []
      : [
          {
            path: '$.failureFlow',
            message: `names no active flow of this tenant: ${key} (a failed run would start nothing)`,
          },
        ];
  };
  const missingValues = async (tenantId: string, reads: VariableRead[]): Promise<FieldError[]> => {
    const named = (kind: VariableRead['kind']) =>
      new Set(reads.filter((read) => read.kind === kind).map((read) => read.name));
    const reading = { vars: named('vars'), secrets: named('secrets'), platform: named('platform') };
    const context = await store.readRunContext(tenantId, reading);
    const present: NamesByKind = {
      vars: new Set(Object.keys(context.vars)),
      secrets: new Set(context.sealedSecrets.map((secret) => secret.name)),
      platform: new Set(Object.keys(context.platform)),
    };
    const missing = (kind: keyof NamesByKind) => [...reading[kind]].some((name) => !present[kind].has(name));
    if (!missing('vars') && !missing('secrets') && !missing('platform')) return [];
    // Names to suggest from: the first page of each kind that misses one.
    const names = async (kind: keyof NamesByKind, list: () => Promise<{ nodes: Array<{ name: string }> }>) =>
      new Set(missing(kind) ? (await list()).nodes.map((value) => value.name) : []);
    const page = { first: SUGGESTION_CANDIDATES };
    const known: NamesByKind = {
      vars: await names('vars', () => store.listVariables(tenantId, page)),
      secrets: await names('secrets', () => store.listSecrets(tenantId, page)),
      platform: new Set([
        ...(await names('platform', () => store.listPlatformValues({ tenantId: null }, page))),
        ...(await names('platform', () => store.listPlatformValues({ tenantId }, page))),
      ]),
    };
    return missingValueWarnings(reads, present, known);
  };
  const load = async (tenantId: string, id: string) => {
    const flow = await store.getFlow(tenantId, id);
    if (!flow) throw new NotFoundError(`no flow ${id}`);
    return flow;
  };

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
        assertValid(body, '$.body');
        const flow = await store.createFlow(tenantId, { id: newId(), key: body.key, name: body.name, draft: body });
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
      handle: async ({ tenantId, query }) => ({ body: await store.listFlows(tenantId, {}, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'EditableFlow',
      scope: 'flows:read',
      summary: 'Get a flow and its draft',
      params: idParams,
      responses: { 200: { description: 'The flow.', schema: flowSchema } },
      handle: async ({ tenantId, params }) => ({ body: await load(tenantId, params.id) }),
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
      async handle({ tenantId, params, body }) {
        assertValid(body.document, '$.body.document');
        const current = await load(tenantId, params.id);
        // The key is the flow URL: senders are configured with it, so it never moves under them.
        if (body.document.key !== current.key) {
          throw new ValidationError('The key of a flow cannot change', [
            {
              path: '$.body.document.key',
              message: `must stay "${current.key}" (it is the flow URL); create a new flow for a new key`,
            },
          ]);
        }
        return { body: await store.replaceDraft(tenantId, params.id, body.revision, body.document) };
      },
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
        const flow = await load(tenantId, params.id);
        await store.deleteFlow(tenantId, params.id);
        await activeVersionChanged(context, tenantId, flow);
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
        const document = body.document ?? (await load(tenantId, params.id)).draft;
        const { errors, warnings } = await review(tenantId, document, body.document ? '$.body.document' : '$.draft');
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
        const flow = await load(tenantId, params.id);
        const { errors, warnings } = await review(tenantId, flow.draft, '$.draft');
        if (errors.length > 0) throw new ValidationError('The flow document is not valid', errors);
        // Publish exactly the draft that was validated: a concurrent edit makes this a 409.
        const version = await store.publishFlow(
          tenantId,
          flow.id,
          body.revision ?? flow.revision,
          pinOperationVersions(flow.draft as FlowDocument, compile.registry),
        );
        await activeVersionChanged(context, tenantId, flow);
        return {
          status: 201,
          body: { ...version, warnings },
          headers: { Location: `/api/v1/flows/${flow.id}/versions/${version.version}` },
        };
      },
    }),
  ];
}
