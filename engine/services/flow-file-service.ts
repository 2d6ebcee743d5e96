import {
  ConflictError,
  environmentId,
  type FieldError,
  type Flow,
  type FlowDocument,
  jsonDiff,
  NotFoundError,
  sortedKeys,
  underPath,
  ValidationError,
} from '../model/index.ts';
import { type CompileOptions, pinOperationVersions, reviewFlow } from '../flow/index.ts';
import type { Store } from '../store/index.ts';
import type { FlowService } from './flow-service.ts';

/** The suffix of a flow's file: `<key>.flow.json`. */
export const FLOW_FILE_SUFFIX = '.flow.json';
/** Flows read a page at a time. */
const FLOW_PAGE = 200;
/** The most files one push takes (a tenant's flows are limited further by TENANT_MAX_FLOWS). */
export const MAX_PUSHED_FILES = 500;

/** The names, never the values, of what a flow needs from the environment it runs in. */
export interface FlowUses {
  variables: string[];
  secrets: string[];
  destinations: string[];
}

/** A flow as a file: its draft with keys sorted (nothing in it differs between deployments), and what it uses. */
export interface FlowFile {
  name: string;
  document: FlowDocument;
  uses: FlowUses;
}

/** What a push does, or would do, to one flow. */
export interface FlowFileChange {
  key: string;
  file: string;
  change: 'added' | 'changed' | 'unchanged';
  /** The fields that change, one line each: `$.nodes[1].config.url: "a" -> "b"`, `+ $.nodes[2]: {...}`. */
  diff: string[];
  /** The version a push with `publish` made active (none: the flow's version was its draft already). */
  published?: number;
}

export interface PushResult {
  dryRun: boolean;
  changes: FlowFileChange[];
  /** What publishing would warn of (values read that are not set now), with each file's paths. */
  warnings: FieldError[];
}

/** What a promotion does, or would do (decision 28). */
export interface Promotion {
  key: string;
  from: { environment: string; version: number };
  to: {
    environment: string;
    /** The target's version that runs the promoted document; null on a dry run that would make one. */
    version: number | null;
    change: FlowFileChange['change'];
    /** Against the version the target ran (all of the document when it ran none). */
    diff: string[];
  };
  dryRun: boolean;
}

/**
 * Flows as files, for the CLI and CI jobs: a tenant's drafts written out in a stable form, and drafts made to match a
 * set of files (every file checked as publish checks it first: one invalid file changes nothing), published on request.
 */
export class FlowFileService {
  constructor(
    private readonly store: Store,
    private readonly flows: FlowService,
    private readonly compile: CompileOptions,
  ) {}

  /** Every flow of the tenant as a file, by key. */
  async pull(tenantId: string): Promise<FlowFile[]> {
    const files: FlowFile[] = [];
    for (let after: string | undefined, more = true; more; ) {
      const page = await this.store.listFlows(tenantId, {}, { first: FLOW_PAGE, after });
      files.push(...page.nodes.map((flow) => this.fileOf(flow.draft)));
      more = page.pageInfo.hasNextPage;
      after = page.pageInfo.endCursor ?? undefined;
    }
    return files.sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** One flow, by key, as a file. */
  async get(tenantId: string, key: string): Promise<FlowFile> {
    const flow = await this.store.findFlowByKey(tenantId, key);
    if (!flow) throw new NotFoundError(`no flow ${key}`);
    return this.fileOf(flow.draft);
  }

  /**
   * Makes the drafts of the files' flows match them (a flow not among them is left alone), and with `publish` makes
   * each the active version. Every file is checked first, as publish checks a draft; errors name the file by its
   * index (`$.files[2].document.nodes[0].config`), and any error changes nothing.
   */
  async push(
    tenantId: string,
    files: Array<{ name: string; document: FlowDocument }>,
    options: { publish?: boolean; dryRun?: boolean },
  ): Promise<PushResult> {
    const errors: FieldError[] = [];
    const warnings: FieldError[] = [];
    const keys = new Map<string, number>();
    for (const [index, { name, document }] of files.entries()) {
      const at = `$.files[${index}]`;
      const review = await this.flows.review(tenantId, document);
      errors.push(...underPath(review.errors, `${at}.document`));
      warnings.push(...underPath(review.warnings, `${at}.document`));
      if (typeof document?.key !== 'string') continue;
      if (name !== `${document.key}${FLOW_FILE_SUFFIX}`)
        errors.push({
          path: `${at}.name`,
          message: `must be ${document.key}${FLOW_FILE_SUFFIX}, after the flow's key`,
        });
      const twin = keys.get(document.key);
      if (twin !== undefined)
        errors.push({ path: `${at}.document.key`, message: `is the key of files[${twin}] too: one file per flow` });
      keys.set(document.key, index);
    }
    if (errors.length > 0) throw new ValidationError('The files are not valid: nothing was changed', errors);

    const planned = await Promise.all(
      files.map(async ({ name, document }) => {
        const flow = await this.store.findFlowByKey(tenantId, document.key);
        const wanted = sortedKeys(document) as FlowDocument;
        const diff = flow ? jsonDiff(sortedKeys(flow.draft), wanted) : [];
        const change: FlowFileChange['change'] = !flow ? 'added' : diff.length > 0 ? 'changed' : 'unchanged';
        return { flow, document: wanted, change: { key: document.key, file: name, change, diff } as FlowFileChange };
      }),
    );
    const changes: FlowFileChange[] = [];
    for (const { flow, document, change } of planned) {
      if (!options.dryRun) {
        const written = await this.write(tenantId, flow, document, change.change);
        if (options.publish && !(await this.runsItsDraft(tenantId, written)))
          change.published = (await this.flows.publish(tenantId, written.id, written.revision)).version;
      }
      changes.push(change);
    }
    return { dryRun: options.dryRun === true, changes, warnings };
  }

  /**
   * A published version of a flow in one of the tenant's environments made the running version of the flow with its
   * key in another (created there the first time). Refused, changing nothing, when the target lacks a variable, secret,
   * destination, action or failure flow the version uses: each is named, at the field that uses it.
   */
  async promote(
    tenantId: string,
    flowId: string,
    route: { from: string; to: string },
    options: { version?: number; dryRun?: boolean },
  ): Promise<Promotion> {
    const [fromId, toId] = [environmentId(tenantId, route.from), environmentId(tenantId, route.to)];
    if (route.from === route.to)
      throw new ValidationError('A flow is promoted to another environment', [
        { path: '$.to', message: `is ${route.from}, the environment the flow is in` },
      ]);
    if (!(await this.store.getTenant(toId)))
      throw new NotFoundError(`tenant ${tenantId} has no environment ${route.to}`, [
        { path: '$.to', message: 'names no environment of the tenant' },
      ]);
    const flow = await this.flows.get(fromId, flowId);
    const number = options.version ?? flow.activeVersion;
    if (number === null)
      throw new ConflictError(`flow ${flow.key} has no published version in ${route.from}: publish it first`);
    const source = await this.store.getFlowVersion(fromId, flow.id, number);
    if (!source)
      throw new NotFoundError(`flow ${flow.key} has no version ${number}`, [
        { path: '$.version', message: 'names no version of the flow' },
      ]);
    const document = sortedKeys(source.document) as FlowDocument;
    const lacking = await this.lacking(toId, document);
    if (lacking.length > 0)
      throw new ConflictError(
        `${route.to} lacks what version ${number} of ${flow.key} uses: nothing was promoted`,
        lacking,
      );
    const target = await this.store.findFlowByKey(toId, document.key);
    const running =
      target?.activeVersion != null
        ? await this.store.getFlowVersion(toId, target.id, target.activeVersion)
        : undefined;
    const diff = jsonDiff(running ? sortedKeys(running.document) : {}, document);
    const change = !target ? 'added' : running && diff.length === 0 ? 'unchanged' : 'changed';
    let version = change === 'unchanged' ? running!.version : null;
    if (!options.dryRun && change !== 'unchanged') {
      const written = await this.write(toId, target, document, change);
      version = (await this.flows.publish(toId, written.id, written.revision)).version;
    }
    return {
      key: flow.key,
      from: { environment: route.from, version: number },
      to: { environment: route.to, version, change, diff },
      dryRun: options.dryRun === true,
    };
  }

  /** What `document` uses that the environment `toId` lacks, as publishing there would find it, and its destinations. */
  private async lacking(toId: string, document: FlowDocument): Promise<FieldError[]> {
    const review = await this.flows.review(toId, document);
    const destinations: FieldError[] = [];
    for (const { name, path } of destinationsOf(document))
      if (!(await this.store.getDestination(toId, name)))
        destinations.push({ path, message: `names the destination ${name}, which is not set` });
    return [...review.errors, ...review.warnings, ...destinations];
  }

  private async write(tenantId: string, flow: Flow | undefined, document: FlowDocument, change: string) {
    if (!flow) return this.flows.create(tenantId, document);
    return change === 'unchanged' ? flow : this.flows.replaceDraft(tenantId, flow.id, flow.revision, document);
  }

  /** Whether the flow's active version is its draft (with its operation versions pinned, as publishing pins them). */
  private async runsItsDraft(tenantId: string, flow: Flow): Promise<boolean> {
    if (flow.activeVersion === null) return false;
    const active = await this.store.getFlowVersion(tenantId, flow.id, flow.activeVersion);
    const pinned = pinOperationVersions(flow.draft, this.compile.registry);
    return active !== undefined && jsonDiff(sortedKeys(active.document), sortedKeys(pinned)).length === 0;
  }

  private fileOf(draft: FlowDocument): FlowFile {
    const document = sortedKeys(draft) as FlowDocument;
    const { reads } = reviewFlow(document, this.compile);
    const named = (kind: string) => [...new Set(reads.filter((read) => read.kind === kind).map(({ name }) => name))];
    return {
      name: `${document.key}${FLOW_FILE_SUFFIX}`,
      document,
      uses: {
        variables: named('vars').sort(),
        secrets: named('secrets').sort(),
        destinations: [...new Set(destinationsOf(document).map(({ name }) => name))].sort(),
      },
    };
  }
}

/**
 * The destinations a document's nodes name, with the path of each naming (an operation opens its destination by the
 * name in `config.destination`).
 */
function destinationsOf(
  value: unknown,
  path = '$',
  found: Array<{ name: string; path: string }> = [],
): Array<{ name: string; path: string }> {
  if (Array.isArray(value))
    for (const [index, item] of value.entries()) destinationsOf(item, `${path}[${index}]`, found);
  else if (value !== null && typeof value === 'object') {
    const node = value as { operation?: unknown; config?: { destination?: unknown } };
    if (typeof node.operation === 'string' && typeof node.config?.destination === 'string')
      found.push({ name: node.config.destination, path: `${path}.config.destination` });
    for (const [key, item] of Object.entries(value)) destinationsOf(item, `${path}.${key}`, found);
  }
  return found;
}
