import type { ErrorRecord } from '../errors.ts';
import type { FlowDocument } from '../flow/schema.ts';
import type { SealedValue } from '../secrets/keyring.ts';
import {
  terminalRunStatuses,
  type TenantAction,
  type LogLevel,
  type RunLog,
  type DataDocument,
  type DataSpace,
  type Statistics,
  type UserSettings,
  type BlockedTopic,
  type HoldReason,
  type MessageInfo,
  type MessageStatus,
  type Batch,
  type BatchStatus,
  type BatchTask,
  type IncrementalField,
  type Destination,
  type Flow,
  type FlowVersion,
  type Message,
  type Run,
  type RunStatus,
  type SecretInfo,
  type Step,
  type Tenant,
  type TenantLimits,
  type TerminalRunStatus,
  type Variable,
} from '../resources.ts';

export type {
  TenantAction,
  LogLevel,
  RunLog,
  DataDocument,
  DataSpace,
  Statistics,
  UserSettings,
  BlockedTopic,
  HoldReason,
  MessageInfo,
  MessageStatus,
  Batch,
  BatchCounts,
  BatchStatus,
  BatchTask,
  IncrementalField,
  Destination,
  Flow,
  FlowVersion,
  Message,
  Run,
  RunStatus,
  SecretInfo,
  Step,
  StepStatus,
  Tenant,
  TenantLimits,
  TerminalRunStatus,
  Variable,
} from '../resources.ts';
export { messageStatuses, runStatuses, stepStatuses, terminalRunStatuses } from '../resources.ts';

/**
 * The persistence port: one slice per aggregate, each caller depending on the slices it uses. The
 * engine and the API speak only this; adapters (SQL on PGlite or PostgreSQL) implement it whole.
 * Every tenant-owned record is read and written with its tenant id: no method reaches across
 * tenants except the operator's tenant and client bookkeeping, and the reconciler's and log
 * pruning's sweeps.
 */
export interface Store
  extends TenantStore,
    CredentialStore,
    FlowStore,
    ValueStore,
    DestinationStore,
    MessageStore,
    RunStore,
    BatchStore,
    StatisticsStore,
    DataSpaceStore,
    LogStore,
    ActionStore {
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The kinds of state a tenant keeps, counted and limited (flows' bytes include their published versions). */
export const STATE_KINDS = [
  'flows',
  'variables',
  'secrets',
  'action versions',
  'destinations',
  'data spaces',
  'documents',
] as const;
export type StateKind = (typeof STATE_KINDS)[number];

/** A limit on one kind of state, with the settings that set it (named in the refusal). Null: none. */
export interface StateLimit {
  kind: StateKind;
  maxItems: number | null;
  itemsSetting: string | null;
  maxBytes: number | null;
  bytesSetting: string | null;
}

/**
 * How many items of a kind a tenant keeps and their size (as JSON text, rows' other fields included),
 * against the deployment's limits (null: none).
 */
export interface StateUsage {
  items: number;
  bytes: number;
  maxItems: number | null;
  maxBytes: number | null;
}

/** Tenants, and the settings of each of their users. */
export interface TenantStore {
  createTenant(tenant: { id: string; name: string }): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | undefined>;
  listTenants(filter: { status?: Tenant['status'] }, page: PageRequest): Promise<Page<Tenant>>;
  /** Suspend (with a reason) or resume a tenant; undefined if there is none. */
  setTenantStatus(id: string, status: Tenant['status'], reason: string | null): Promise<Tenant | undefined>;
  /** Replace the operator's overrides of the per-tenant settings; undefined if there is no tenant. */
  setTenantLimits(id: string, limits: TenantLimits): Promise<Tenant | undefined>;
  /** Remove the tenant and every record it owns (flows, messages, runs, secrets, clients...). */
  deleteTenant(id: string): Promise<boolean>;
  /**
   * The deployment's limits on what each tenant keeps, replacing those in force. From then on a write
   * that would pass one fails with a LimitReachedError, whichever path it takes.
   */
  setStateLimits(limits: StateLimit[]): Promise<void>;
  /** What the tenant keeps, by kind of state, and the limits on it. */
  tenantUsage(tenantId: string): Promise<Record<string, StateUsage>>;
  getUserSettings(tenantId: string, subject: string): Promise<UserSettings | undefined>;
  putUserSettings(tenantId: string, subject: string, settings: UserSettings['settings']): Promise<UserSettings>;
}

/** API clients (their secrets hashed) and the embedded issuer's signing keys. */
export interface CredentialStore {
  createClient(client: Omit<Client, 'createdAt'>): Promise<Client>;
  getClient(clientId: string): Promise<Client | undefined>;
  listSigningKeys(): Promise<SigningKey[]>;
  addSigningKey(key: Omit<SigningKey, 'createdAt'>): Promise<void>;
}

/** Editable flows (their drafts) and their immutable published versions. */
export interface FlowStore {
  createFlow(tenantId: string, flow: { id: string; key: string; name: string; draft: FlowDocument }): Promise<Flow>;
  getFlow(tenantId: string, id: string): Promise<Flow | undefined>;
  findFlowByKey(tenantId: string, key: string): Promise<Flow | undefined>;
  listFlows(tenantId: string, filter: { published?: boolean }, page: PageRequest): Promise<Page<Flow>>;
  /**
   * Replace the draft if `expectedRevision` is current and the key unchanged (it is the flow URL); otherwise
   * ConflictError.
   */
  replaceDraft(tenantId: string, id: string, expectedRevision: number, draft: FlowDocument): Promise<Flow>;
  deleteFlow(tenantId: string, id: string): Promise<boolean>;
  /** Store `document` as the next immutable version and make it the active one. */
  publishFlow(
    tenantId: string,
    id: string,
    expectedRevision: number | undefined,
    document: FlowDocument,
  ): Promise<FlowVersion>;
  setFlowActive(tenantId: string, id: string, active: boolean): Promise<Flow>;
  getFlowVersion(tenantId: string, flowId: string, version: number): Promise<FlowVersion | undefined>;
  listFlowVersions(tenantId: string, flowId: string, page: PageRequest): Promise<Page<FlowVersion>>;
}

/**
 * Values flows read: a tenant's variables and sealed secrets, and the platform's values with each tenant's
 * overrides.
 */
export interface ValueStore {
  putVariable(tenantId: string, name: string, value: unknown): Promise<{ variable: Variable; created: boolean }>;
  getVariable(tenantId: string, name: string): Promise<Variable | undefined>;
  listVariables(tenantId: string, page: PageRequest): Promise<Page<Variable>>;
  deleteVariable(tenantId: string, name: string): Promise<boolean>;
  putSecret(tenantId: string, name: string, sealed: SealedValue): Promise<{ secret: SecretInfo; created: boolean }>;
  listSecrets(tenantId: string, page: PageRequest): Promise<Page<SecretInfo>>;
  deleteSecret(tenantId: string, name: string): Promise<boolean>;
  /** Sealed values of the named secrets (a trigger's verification key). */
  sealedSecrets(tenantId: string, names: Iterable<string>): Promise<Array<{ name: string } & SealedValue>>;
  /** Platform-wide named values (PlatformGlobal); `tenantId` set: one tenant's overrides (PlatformTenantGlobal). */
  putPlatformValue(
    scope: PlatformScope,
    name: string,
    value: unknown,
  ): Promise<{ variable: Variable; created: boolean }>;
  getPlatformValue(scope: PlatformScope, name: string): Promise<Variable | undefined>;
  listPlatformValues(scope: PlatformScope, page: PageRequest): Promise<Page<Variable>>;
  deletePlatformValue(scope: PlatformScope, name: string): Promise<boolean>;
}

/** Destinations: settings in the clear, credentials sealed. */
export interface DestinationStore {
  /** Create or replace a destination (settings in the clear, credentials sealed). */
  putDestination(
    tenantId: string,
    destination: NewDestination,
  ): Promise<{ destination: Destination; created: boolean }>;
  getDestination(tenantId: string, name: string): Promise<Destination | undefined>;
  listDestinations(tenantId: string, page: PageRequest): Promise<Page<Destination>>;
  deleteDestination(tenantId: string, name: string): Promise<boolean>;
  /** A destination with its sealed credentials, for the run that uses it. */
  getSealedDestination(
    tenantId: string,
    name: string,
  ): Promise<{ destination: Destination; sealedCredentials: SealedValue } | undefined>;
}

/**
 * Inbound messages and what became of them: intake, the MessageInfo and MessageQueue views, replays and retries,
 * blocked topics and held runs.
 */
export interface MessageStore {
  /**
   * Record inbound messages with their runs, all in one statement. A run is `held` (no job is to be
   * queued) when its tenant is suspended or its message's topic is blocked; the decision is taken
   * in the same statement, against the rows that suspend or block, so it cannot race a resume or
   * an unblock. A message whose delivery id was already recorded for its flow is a duplicate: it
   * is recorded without a body, pointing at the first, and the first one's run is returned.
   * Results come in the order of `messages`.
   */
  acceptMessages(messages: Array<{ message: NewMessage; runId: string }>): Promise<AcceptedMessage[]>;
  /** Messages newest first; bodies over `bodyCapBytes` are left out (`bodyTruncated`). */
  listMessages(
    tenantId: string,
    filter: MessageFilter,
    page: PageRequest,
    bodyCapBytes: number,
  ): Promise<Page<MessageInfo>>;
  getMessage(
    tenantId: string,
    id: string,
    bodyCapBytes: number,
  ): Promise<{ message: MessageInfo; runs: Run[] } | undefined>;
  /**
   * A new queued run of the message on its flow's active version. Refused (ConflictError) for a
   * duplicate, a batch item, a message whose latest run is unfinished, or a flow without an active
   * version; NotFoundError when there is no such message.
   */
  replayMessage(tenantId: string, messageId: string, runId: string): Promise<Run>;
  /** The tenant's backlog: unfinished runs, finished runs and messages since `since`, the oldest waiting run. */
  backlog(tenantId: string, since: string): Promise<Backlog>;
  /**
   * A new queued run, on the flow's active version, for each message of the flow whose latest run
   * failed (at most `limit`, oldest first); `more` when others remain. Batch items are left to
   * their batch's retry.
   */
  retryFailedRuns(
    tenantId: string,
    flowId: string,
    newId: () => string,
    limit: number,
  ): Promise<{ runs: Run[]; more: boolean }>;
  blockTopic(
    tenantId: string,
    topic: string,
    reason: string | null,
  ): Promise<{ blockedTopic: BlockedTopic; created: boolean }>;
  listBlockedTopics(tenantId: string, page: PageRequest): Promise<Page<BlockedTopic>>;
  unblockTopic(tenantId: string, topic: string): Promise<boolean>;
  /**
   * Held runs (of a hold reason and topic, when given) whose hold no longer applies become queued,
   * and are returned in arrival order to be enqueued; those still suspended or blocked stay held
   * (with the reason that now applies). One page: the `limit` held runs after `after` (run ids in
   * arrival order); `last` is where the next page starts, undefined after the last.
   */
  releaseHeld(
    tenantId: string,
    filter: HeldFilter,
    page: { after?: string; limit: number },
  ): Promise<{ released: Run[]; last?: string }>;
  /** At most `limit` held runs become `cancelled` with `reason`; returns how many. */
  discardHeld(tenantId: string, filter: HeldFilter, reason: string, limit: number): Promise<number>;
}

/** Runs as workers take them up, checkpoint and finish them. */
export interface RunStore {
  /**
   * Take a run up: mark it running and count the attempt, and return it with its message,
   * checkpoints and the variables and sealed secrets it reads, in one round trip. A finished run
   * is returned as it is, unchanged.
   */
  beginRun(tenantId: string, runId: string, reads?: RunReads): Promise<RunState | undefined>;
  /**
   * Save checkpoints, optionally the run's new status, and what its operations logged, in one
   * statement. A finished run keeps its first outcome; returns whether the status was written.
   */
  saveProgress(
    tenantId: string,
    runId: string,
    steps: Step[],
    outcome?: RunOutcome,
    logs?: RunLogAppend,
  ): Promise<boolean>;
  /** What a run would read (a test run, which has no record): the same as `beginRun` gives. */
  readRunContext(tenantId: string, reads: RunReads): Promise<Pick<RunState, 'vars' | 'sealedSecrets' | 'platform'>>;
  getRun(tenantId: string, runId: string): Promise<{ run: Run; steps: Step[] } | undefined>;
  /** Whether a run of the flow has not finished yet (queued, running or waiting). */
  hasUnfinishedRun(tenantId: string, flowId: string): Promise<boolean>;
  listRuns(tenantId: string, filter: { flowId?: string; status?: RunStatus }, page: PageRequest): Promise<Page<Run>>;
  /**
   * Unfinished runs (queued, running, waiting) of every tenant created before `createdBefore`, oldest
   * first, after the cursor: what the queue reconciler checks against the queue's jobs.
   */
  listUnfinishedRuns(
    createdBefore: string,
    after: UnfinishedRunCursor | undefined,
    limit: number,
  ): Promise<UnfinishedRun[]>;
}

/** Fan-out batches and their tasks, and the incremental field a poll moves on. */
export interface BatchStore {
  /** A fan-out node's batch, with its task counts. */
  createBatch(tenantId: string, batch: NewBatch): Promise<Batch>;
  getBatch(tenantId: string, id: string): Promise<Batch | undefined>;
  listBatches(
    tenantId: string,
    filter: { flowId?: string; status?: BatchStatus },
    page: PageRequest,
  ): Promise<Page<Batch>>;
  /** Moves a batch on; `succeeded` and `failed` also stamp when it finished. */
  setBatchStatus(tenantId: string, id: string, status: BatchStatus): Promise<void>;
  /**
   * Adds the items the batch does not hold yet (by key), each as a task: a message (the item), a
   * run of the flow marked with the batch, and the fan-out node's checkpoint (the item), all in one
   * statement. Returns the new runs, to be enqueued.
   */
  addBatchTasks(tenantId: string, batchId: string, items: NewBatchTask[]): Promise<Run[]>;
  listBatchTasks(
    tenantId: string,
    batchId: string,
    filter: { status?: RunStatus },
    page: PageRequest,
  ): Promise<Page<BatchTask>>;
  /**
   * A new run for each failed task of the batch (the first `limit`), in place of the failed one
   * (which stays in the history); `more` when failed tasks are left.
   */
  retryFailedTasks(
    tenantId: string,
    batchId: string,
    newId: () => string,
    limit: number,
  ): Promise<{ runs: Run[]; more: boolean }>;
  getIncrementalField(tenantId: string, flowId: string): Promise<IncrementalField | undefined>;
  listIncrementalFields(tenantId: string, page: PageRequest): Promise<Page<IncrementalField>>;
  /** Sets the field; `movedAt` changes only when the value does. */
  putIncrementalField(
    tenantId: string,
    flowId: string,
    field: { field: string; value: string | null; overlapMs: number },
  ): Promise<IncrementalField>;
  deleteIncrementalField(tenantId: string, flowId: string): Promise<boolean>;
}

/** What happened, counted: per time bucket, and per flow. */
export interface StatisticsStore {
  /**
   * Runs created in [from, to) per time bucket, flow and status, with duration percentiles; messages per bucket and
   * topic.
   */
  statistics(tenantId: string, request: StatisticsRequest): Promise<Statistics>;
  /** Active flows, and each flow's latest failed run. */
  flowHealth(tenantId: string): Promise<{ activeFlows: number; lastErrors: FlowLastError[] }>;
}

/** Data spaces and their documents. */
export interface DataSpaceStore {
  putDataSpace(
    tenantId: string,
    name: string,
    description: string | null,
  ): Promise<{ space: DataSpace; created: boolean }>;
  getDataSpace(tenantId: string, name: string): Promise<DataSpace | undefined>;
  listDataSpaces(tenantId: string, page: PageRequest): Promise<Page<DataSpace>>;
  /** The space and all its documents. */
  deleteDataSpace(tenantId: string, name: string): Promise<boolean>;
  /** Create or replace documents of an existing space, in one statement; undefined if there is no such space. */
  putDocuments(
    tenantId: string,
    space: string,
    documents: Array<{ key: string; value: unknown }>,
  ): Promise<{ created: number; updated: number } | undefined>;
  getDocument(tenantId: string, space: string, key: string): Promise<DataDocument | undefined>;
  listDocuments(
    tenantId: string,
    space: string,
    filter: { prefix?: string },
    page: PageRequest,
  ): Promise<Page<DataDocument>>;
  deleteDocument(tenantId: string, space: string, key: string): Promise<boolean>;
}

/** What operations logged during runs. */
export interface LogStore {
  /** Log lines newest first. */
  listRunLogs(tenantId: string, filter: RunLogFilter, page: PageRequest): Promise<Page<RunLog>>;
  /** Delete log lines older than `before`, of every tenant; returns how many. */
  pruneRunLogs(before: string): Promise<number>;
}

/** Tenants' low-code actions, versioned. */
export interface ActionStore {
  /** Saves the action as its next version (1 for a new name). */
  putAction(
    tenantId: string,
    action: Pick<TenantAction, 'name' | 'description' | 'expression' | 'inputSchema' | 'outputSchema'>,
  ): Promise<TenantAction>;
  /** A version of an action; the latest without one. */
  getAction(tenantId: string, name: string, version?: number): Promise<TenantAction | undefined>;
  /** The latest version of each action, by name. */
  listActions(tenantId: string, page: PageRequest): Promise<Page<TenantAction>>;
  listActionVersions(tenantId: string, name: string, page: PageRequest): Promise<Page<TenantAction>>;
  /** Every version. */
  deleteAction(tenantId: string, name: string): Promise<boolean>;
}

export interface MessageFilter {
  flowId?: string;
  status?: MessageStatus;
  topic?: string;
  receivedFrom?: string;
  receivedTo?: string;
}

export interface Backlog {
  since: string;
  /** Per run status: unfinished ones all, finished ones created since `since`. */
  runs: Record<RunStatus, number>;
  /** Per message status, of messages received since `since`. */
  messages: Record<MessageStatus, number>;
  oldestWaiting: {
    runId: string;
    flowId: string;
    status: 'queued' | 'waiting';
    createdAt: string;
    ageMs: number;
  } | null;
}

export interface NewRunLog {
  nodeId: string;
  level: LogLevel;
  message: string;
  data: unknown;
  loggedAt: string;
}

/** Log lines of a run to keep with its checkpoints; a run keeps at most `perRunLimit` (later ones are dropped). */
export interface RunLogAppend {
  flowId: string;
  lines: NewRunLog[];
  perRunLimit: number;
}

export interface RunLogFilter {
  flowId?: string;
  runId?: string;
  /** This level and above. */
  level?: LogLevel;
  from?: string;
  to?: string;
  /** Lines whose message contains it (case-insensitive). */
  text?: string;
}

/** Where a platform value lives: platform-wide, or one tenant's override. */
export interface PlatformScope {
  tenantId: string | null;
}

export interface StatisticsRequest {
  from: string;
  to: string;
  interval: 'hour' | 'day';
  flowId?: string;
}

export interface FlowLastError {
  flowId: string;
  flowName: string;
  runId: string;
  error: ErrorRecord | null;
  finishedAt: string | null;
}

export interface HeldFilter {
  heldBy?: HoldReason;
  topic?: string;
}

export interface PageRequest {
  first: number;
  after?: string;
}

/** The connection shape of the seed: `{nodes, pageInfo: {hasNextPage, endCursor}}`. */
export interface Page<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** Every item of a paged list, page by page. */
export async function* pages<T>(list: (after?: string) => Promise<Page<T>>): AsyncGenerator<T> {
  let after: string | undefined;
  do {
    const page = await list(after);
    yield* page.nodes;
    after = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? undefined) : undefined;
  } while (after);
}

export interface Client {
  clientId: string;
  /** Null for an operator client, which may act for every tenant. */
  tenantId: string | null;
  /** SHA-256 of the secret; secrets are 32 random bytes, so a fast hash is enough. */
  secretHash: string;
  scopes: string[];
  operator: boolean;
  createdAt: string;
}

export interface SigningKey {
  kid: string;
  /** The private JWK, sealed with the secrets keyring. */
  sealedPrivateJwk: SealedValue;
  publicJwk: Record<string, unknown>;
  createdAt: string;
}

export const isTerminal = (status: RunStatus): status is TerminalRunStatus =>
  (terminalRunStatuses as readonly string[]).includes(status);

export type NewMessage = Omit<Message, 'receivedAt'>;

export interface NewDestination {
  name: string;
  type: Destination['type'];
  settings: Record<string, unknown>;
  credentialsSet: string[];
  sealedCredentials: SealedValue;
}

export interface NewBatch {
  id: string;
  flowId: string;
  flowVersion: number;
  runId: string;
  nodeId: string;
  windowFrom: string | null;
  windowTo: string | null;
}

export interface NewBatchTask {
  key: string;
  item: unknown;
  messageId: string;
  runId: string;
}

export interface AcceptedMessage {
  duplicate: boolean;
  messageId: string;
  run: Run;
}

export interface RunOutcome {
  status: 'waiting' | TerminalRunStatus;
  error: ErrorRecord | null;
}

/** Names of the variables, secrets and platform values a run reads; '*' for every platform value. */
export interface RunReads {
  vars: ReadonlySet<string> | readonly string[];
  secrets: ReadonlySet<string> | readonly string[];
  platform: ReadonlySet<string> | readonly string[] | '*';
}

export interface RunState {
  run: Run;
  /** Its body as a JsonText when it is large (LARGE_JSON_LENGTH): the run parses it only if it reads it. */
  message: Message;
  steps: Step[];
  vars: Record<string, unknown>;
  sealedSecrets: Array<{ name: string } & SealedValue>;
  /** `$platform`: the tenant's override of each name, else the platform's value. */
  platform: Record<string, unknown>;
}

/** A run the queue reconciler checks, and where the next look continues. */
export interface UnfinishedRun {
  tenantId: string;
  id: string;
  flowId: string;
  flowVersion: number;
  status: 'queued' | 'running' | 'waiting';
  createdAt: string;
}

export type UnfinishedRunCursor = Pick<UnfinishedRun, 'createdAt' | 'id'>;
