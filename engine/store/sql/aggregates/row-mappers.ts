// Rows as the port's records: one mapper per record, the columns read as the record needs them.
import { JsonText } from '../../../model/index.ts';
import type {
  Batch,
  BatchTask,
  BlockedTopic,
  Client,
  DataDocument,
  DataSpace,
  Destination,
  Environment,
  Flow,
  FlowVersion,
  IncrementalField,
  Message,
  MessageInfo,
  Run,
  RunLog,
  SecretInfo,
  Step,
  Tenant,
  TenantAction,
  UserSettings,
  Variable,
} from '../../port.ts';
import { iso, isoOrNull, type Row } from './rows.ts';

export const toTenant = (r: Row): Tenant => ({
  id: r.id,
  name: r.name,
  status: r.status,
  suspendedReason: r.suspended_reason ?? null,
  suspendedAt: isoOrNull(r.suspended_at),
  limits: r.limits ?? {},
  createdAt: iso(r.created_at),
});
export const toClient = (r: Row): Client => ({
  clientId: r.client_id,
  tenantId: r.tenant_id,
  secretHash: r.secret_hash,
  scopes: r.scopes,
  operator: r.operator,
  environments: r.environments ?? null,
  createdAt: iso(r.created_at),
});
export const toEnvironment = (r: Row): Environment => ({ name: r.environment, createdAt: iso(r.created_at) });
export const toFlow = (r: Row): Flow => ({
  tenantId: r.tenant_id,
  id: r.id,
  key: r.key,
  name: r.name,
  draft: r.draft,
  revision: r.revision,
  activeVersion: r.active_version,
  latestVersion: r.latest_version,
  active: r.active,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
export const toVersion = (r: Row): FlowVersion => ({
  tenantId: r.tenant_id,
  flowId: r.flow_id,
  version: r.version,
  document: r.document,
  publishedAt: iso(r.published_at),
});
export const toVariable = (r: Row): Variable => ({
  name: r.name,
  value: r.value,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
export const toSecretInfo = (r: Row): SecretInfo => ({
  name: r.name,
  keyId: r.key_id,
  fingerprint: r.fingerprint,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
export const toDestination = (r: Row): Destination => ({
  name: r.name,
  type: r.type,
  settings: r.settings,
  credentialsSet: r.credentials_set,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
export const toMessage = (r: Row): Message => ({
  tenantId: r.tenant_id,
  id: r.id,
  flowId: r.flow_id,
  flowVersion: r.flow_version,
  deliveryId: r.delivery_id,
  topic: r.topic ?? null,
  body: r.body,
  headers: r.headers,
  query: r.query,
  receivedAt: iso(r.received_at),
});
export const toMessageInfo = (r: Row): MessageInfo => ({
  id: r.id,
  flowId: r.flow_id,
  flowVersion: r.flow_version,
  deliveryId: r.delivery_id,
  topic: r.topic,
  status: r.status,
  duplicateOf: r.duplicate_of,
  headers: r.headers,
  query: r.query,
  // As text, so that the API shows its numbers as they came (stringifyJson).
  body: r.body === null || r.body === 'null' ? null : new JsonText(r.body),
  bodyBytes: Number(r.body_bytes),
  bodyTruncated: r.body_truncated,
  receivedAt: iso(r.received_at),
  runId: r.run_id ?? null,
});
export const toDataSpace = (r: Row): DataSpace => ({
  name: r.name,
  description: r.description ?? null,
  documents: Number(r.documents ?? 0),
  createdAt: iso(r.created_at),
});
export const toDataDocument = (r: Row): DataDocument => ({
  key: r.key,
  value: r.value,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
export const toRunLog = (r: Row): RunLog => ({
  id: String(r.seq),
  flowId: r.flow_id,
  runId: r.run_id,
  nodeId: r.node_id,
  level: r.level,
  message: r.message,
  data: r.data ?? null,
  loggedAt: iso(r.logged_at),
});
export const toTenantAction = (r: Row): TenantAction => ({
  name: r.name,
  version: r.version,
  description: r.description ?? null,
  expression: r.expression,
  inputSchema: r.input_schema,
  outputSchema: r.output_schema,
  createdAt: iso(r.created_at),
});
export const toUserSettings = (r: Row): UserSettings => ({
  subject: r.subject,
  settings: r.settings,
  updatedAt: iso(r.updated_at),
});
export const toBlockedTopic = (r: Row): BlockedTopic => ({
  topic: r.topic,
  reason: r.reason,
  blockedAt: iso(r.blocked_at),
  held: Number(r.held ?? 0),
});
export const toRun = (r: Row): Run => ({
  tenantId: r.tenant_id,
  id: r.id,
  flowId: r.flow_id,
  flowVersion: r.flow_version,
  messageId: r.message_id,
  status: r.status,
  heldBy: r.held_by ?? null,
  attempts: r.attempts,
  error: r.error,
  createdAt: iso(r.created_at),
  startedAt: isoOrNull(r.started_at),
  finishedAt: isoOrNull(r.finished_at),
  batchId: r.batch_id ?? null,
  parentRunId: r.parent_run_id ?? null,
  callDepth: r.call_depth ?? 0,
  replayOf: r.replay_of ?? null,
  concurrency: r.concurrency ?? null,
  debounce: r.debounce ?? null,
  debouncedBy: r.debounced_by ?? null,
  budgetWaitMs: Number(r.budget_wait_ms ?? 0),
});
export const toBatch = (r: Row): Batch => {
  const total = Number(r.total ?? 0);
  const unfinished = Number(r.unfinished ?? 0);
  return {
    tenantId: r.tenant_id,
    id: r.id,
    flowId: r.flow_id,
    flowVersion: r.flow_version,
    runId: r.run_id,
    nodeId: r.node_id,
    status: r.settled_status ?? r.status,
    windowFrom: isoOrNull(r.window_from),
    windowTo: isoOrNull(r.window_to),
    counts: {
      total,
      unfinished,
      succeeded: Number(r.succeeded ?? 0),
      failed: Number(r.failed ?? 0),
      skipped: Number(r.skipped ?? 0),
      progress: total === 0 ? 100 : Math.round(((total - unfinished) / total) * 1000) / 10,
    },
    startedAt: iso(r.created_at),
    finishedAt: isoOrNull(r.settled_status ? r.last_finished_at : r.finished_at),
  };
};
export const toBatchTask = (r: Row): BatchTask => ({
  batchId: r.batch_id,
  key: r.key,
  runId: r.run_id,
  status: r.status,
  error: r.error,
  retries: r.retries,
});
export const toIncrementalField = (r: Row): IncrementalField => ({
  flowId: r.flow_id,
  field: r.field,
  value: isoOrNull(r.value),
  movedAt: isoOrNull(r.moved_at),
  overlapMs: r.overlap_ms,
  updatedAt: iso(r.updated_at),
});
export const toStep = (r: Row): Step => ({
  runId: r.run_id,
  key: r.key,
  nodeId: r.node_id,
  status: r.status,
  attempts: r.attempts,
  output: r.output,
  error: r.error,
  startedAt: iso(r.started_at),
  finishedAt: isoOrNull(r.finished_at),
  ...(r.exchanges ? { exchanges: r.exchanges } : {}),
});
