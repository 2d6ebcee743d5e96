import {
  type FieldError,
  type Flow,
  type FlowDocument,
  type FlowVersion,
  newId,
  NotFoundError,
  underPath,
  ValidationError,
} from '../model/index.ts';
import {
  type CompileOptions,
  missingValueWarnings,
  type NamesByKind,
  pinOperationVersions,
  reviewFlow,
  validateFlow,
  type VariableRead,
} from '../flow/index.ts';
import { ACTION_PREFIX } from '../plugins/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import { found } from './references.ts';

/** How many names of each kind a warning's "did you mean" looks among. */
const SUGGESTION_CANDIDATES = 200;
/** How many of its newest versions a published flow is shown with. */
const VERSIONS_SHOWN = 50;

/** What publishing finds: `errors` stop it; `warnings` (values read that are not set now) do not. */
export interface FlowReview {
  errors: FieldError[];
  warnings: FieldError[];
}

/**
 * Told when the version a flow runs changed, or the flow went: whoever resolves flow URLs or keeps schedules
 * follows (in a process: intake's cache and the flow's schedule).
 */
export type ActiveVersionListener = (tenantId: string, flow: { id: string; key: string }) => Promise<void>;

/**
 * What a tenant does with its flows: drafts written and checked, versions published, a flow made active or not.
 * Whatever changes which version a flow URL or a schedule runs goes through here, and is announced.
 * Field errors name the fields of the document given from `$`, and of a stored draft from `$.draft`.
 */
export class FlowService {
  constructor(
    private readonly store: Store,
    private readonly compile: CompileOptions,
    private readonly activeVersionChanged: ActiveVersionListener,
  ) {}

  async get(tenantId: string, id: string): Promise<Flow> {
    return found(`flow ${id}`, await this.store.getFlow(tenantId, id));
  }

  list(tenantId: string, filter: { published?: boolean }, page: PageRequest): Promise<Page<Flow>> {
    return this.store.listFlows(tenantId, filter, page);
  }

  /** A flow that has a version, with the first page of its versions (newest first). */
  async getPublished(tenantId: string, id: string): Promise<Flow & { versions: Page<FlowVersion> }> {
    const flow = await this.store.getFlow(tenantId, id);
    if (!flow || flow.latestVersion === null) throw new NotFoundError(`no published flow ${id}`);
    return { ...flow, versions: await this.store.listFlowVersions(tenantId, id, { first: VERSIONS_SHOWN }) };
  }

  listVersions(tenantId: string, id: string, page: PageRequest): Promise<Page<FlowVersion>> {
    return this.store.listFlowVersions(tenantId, id, page);
  }

  async getVersion(tenantId: string, id: string, version: number): Promise<FlowVersion> {
    const stored = await this.store.getFlowVersion(tenantId, id, version);
    if (!stored) throw new NotFoundError(`flow ${id} has no version ${version}`);
    return stored;
  }

  /** A new flow whose draft is `document`, checked as on publish. */
  async create(tenantId: string, document: FlowDocument): Promise<Flow> {
    this.assertValid(document);
    return this.store.createFlow(tenantId, { id: newId(), key: document.key, name: document.name, draft: document });
  }

  /** The draft replaced, if it is still at `revision` (else ConflictError); the key never changes. */
  async replaceDraft(tenantId: string, id: string, revision: number, document: FlowDocument): Promise<Flow> {
    this.assertValid(document);
    const current = await this.get(tenantId, id);
    // The key is the flow URL: senders are configured with it, so it never moves under them.
    if (document.key !== current.key) {
      throw new ValidationError('The key of a flow cannot change', [
        { path: '$.key', message: `must stay "${current.key}" (it is the flow URL); create a new flow for a new key` },
      ]);
    }
    return this.store.replaceDraft(tenantId, id, revision, document);
  }

  /** The flow, its draft and its versions gone (its runs stay in the history); its URL and schedule stop. */
  async delete(tenantId: string, id: string): Promise<void> {
    const flow = await this.get(tenantId, id);
    await this.store.deleteFlow(tenantId, id);
    await this.activeVersionChanged(tenantId, flow);
  }

  /** What publishing the stored draft would find. */
  async reviewDraft(tenantId: string, id: string): Promise<FlowReview> {
    return this.reviewAt(tenantId, (await this.get(tenantId, id)).draft, '$.draft');
  }

  /** What publishing `document` would find. */
  review(tenantId: string, document: unknown): Promise<FlowReview> {
    return this.reviewAt(tenantId, document, '$');
  }

  /**
   * The draft published as the next immutable version, made the active one. With `revision`, a draft changed
   * since is a ConflictError; nodes that name no operation version are pinned to their operation's newest major.
   */
  async publish(tenantId: string, id: string, revision?: number): Promise<FlowVersion & { warnings: FieldError[] }> {
    const flow = await this.get(tenantId, id);
    const { errors, warnings } = await this.reviewAt(tenantId, flow.draft, '$.draft');
    if (errors.length > 0) throw new ValidationError('The flow document is not valid', errors);
    // Publish exactly the draft that was reviewed: a concurrent edit makes this a conflict.
    const version = await this.store.publishFlow(
      tenantId,
      flow.id,
      revision ?? flow.revision,
      pinOperationVersions(flow.draft, this.compile.registry),
    );
    await this.activeVersionChanged(tenantId, flow);
    return { ...version, warnings };
  }

  /** Whether the flow URL (or schedule) starts runs of the active version. */
  async setActive(tenantId: string, id: string, active: boolean): Promise<Flow> {
    const flow = await this.store.setFlowActive(tenantId, id, active);
    await this.activeVersionChanged(tenantId, flow);
    return flow;
  }

  /** The tenant's flow with the key of `document`, created and published from it the first time. */
  async installed(tenantId: string, document: FlowDocument): Promise<Flow> {
    let flow = await this.store.findFlowByKey(tenantId, document.key);
    if (!flow) {
      flow = await this.store.createFlow(tenantId, {
        id: newId(),
        key: document.key,
        name: document.name,
        draft: document,
      });
      await this.store.publishFlow(
        tenantId,
        flow.id,
        flow.revision,
        pinOperationVersions(document, this.compile.registry),
      );
    }
    await this.activeVersionChanged(tenantId, flow);
    return flow;
  }

  private assertValid(document: unknown) {
    const errors = validateFlow(document, this.compile);
    if (errors.length > 0) throw new ValidationError('The flow document is not valid', errors);
  }

  /**
   * The document's problems, and that every `action:<name>` node names an action (and version) the tenant has;
   * as warnings, the variables, secrets and platform values it reads that do not exist now, and a failure flow
   * that is not active. Paths start at `prefix`.
   */
  private async reviewAt(tenantId: string, document: unknown, prefix: string): Promise<FlowReview> {
    const reviewed = reviewFlow(document, this.compile);
    const errors = underPath(reviewed.errors, prefix);
    const warnings = underPath(
      [...(await this.missingValues(tenantId, reviewed.reads)), ...(await this.missingFailureFlow(tenantId, document))],
      prefix,
    );
    if (errors.length > 0) return { errors, warnings };
    for (const [index, node] of (document as FlowDocument).nodes.entries()) {
      if (!node.operation.startsWith(ACTION_PREFIX)) continue;
      const version = (node.config as { version?: unknown } | undefined)?.version;
      const name = node.operation.slice(ACTION_PREFIX.length);
      if (!(await this.store.getAction(tenantId, name, typeof version === 'number' ? version : undefined))) {
        errors.push({
          path: `${prefix}.nodes[${index}].operation`,
          message: `names no action of this tenant: ${name}${typeof version === 'number' ? ` v${version}` : ''}`,
          node: node.id,
        });
      }
    }
    return { errors, warnings };
  }

  private async missingFailureFlow(tenantId: string, document: unknown): Promise<FieldError[]> {
    const key = (document as { failureFlow?: unknown } | null)?.failureFlow;
    if (typeof key !== 'string') return [];
    const flow = await this.store.findFlowByKey(tenantId, key);
    return flow?.active && flow.activeVersion !== null
      ? []
      : [
          {
            path: '$.failureFlow',
            message: `names no active flow of this tenant: ${key} (a failed run would start nothing)`,
          },
        ];
  }

  private async missingValues(tenantId: string, reads: VariableRead[]): Promise<FieldError[]> {
    const { store } = this;
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
  }
}
