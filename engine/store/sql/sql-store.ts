import { ConflictError, NotFoundError, ValidationError } from '../../errors.ts';
import type { FlowDocument } from '../../flow/schema.ts';
import type { SealedValue } from '../../secrets/keyring.ts';
import type {
  AcceptedMessage,
  BlockedTopic,
  HeldFilter,
  MessageFilter,
  MessageInfo,
  Batch,
  BatchStatus,
  BatchTask,
  Client,
  Destination,
  IncrementalField,
  NewBatch,
  NewBatchTask,
  Flow,
  FlowVersion,
  Message,
  NewMessage,
  Page,
  PageRequest,
  Run,
  RunOutcome,
  RunReads,
  RunState,
  RunStatus,
  SecretInfo,
  NewDestination,
  SigningKey,
  Step,
  Store,
  Tenant,
  Variable,
} from '../port.ts';
import {
  isTerminal,
  messageStatuses,
  runStatuses,
  type Backlog,
  type TenantAction,
  type RunLogAppend,
  type RunLog,
  type RunLogFilter,
  type DataDocument,
  type DataSpace,
  type PlatformScope,
  type Statistics,
  type StatisticsRequest,
  type UserSettings,
  type UnfinishedRun,
  type UnfinishedRunCursor,
} from '../port.ts';
import { idAt } from '../../ids.ts';
import type { SqlDriver } from './driver.ts';
import { migrate } from './migrations.ts';
import { GroupCommit } from '../../group-commit.ts';

interface ProgressSave {
  tenantId: string;
  runId: string;
  steps: Step[];
  outcome?: RunOutcome;
  logs?: RunLogAppend;
}

// biome-ignore lint/suspicious/noExplicitAny: a row's columns are typed by the mapper that reads them
type Row = Record<string, any>;

const iso = (value: unknown): string =>
  value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
const isoOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : iso(value));
const json = (value: unknown): string => JSON.stringify(value ?? null);
const TERMINAL = `('succeeded','failed','filtered','skipped','cancelled')`;
const UNFINISHED = `('queued','running','waiting')`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids are UUIDs: anything else names no record (and must not reach a uuid column as an error). */
const isUuid = (id: string) => UUID.test(id);

/** Cursors are opaque to clients: base64url of the last sort key, checked on the way back in. */
const encodeCursor = (key: string) => Buffer.from(key).toString('base64url');
function decodeCursor(cursor: string | undefined, shape: RegExp = /^[\s\S]{1,200}$/): string | null {
  if (cursor === undefined) return null;
  const key = Buffer.from(cursor, 'base64url').toString();
  if (!shape.test(key))
    throw new ValidationError('Invalid cursor', [{ path: '$.after', message: 'is not a cursor of this list' }]);
  return key;
}

function page<T>(rows: Row[], request: PageRequest, map: (row: Row) => T, cursorOf: (row: Row) => string): Page<T> {
  const hasNextPage = rows.length > request.first;
  const visible = hasNextPage ? rows.slice(0, request.first) : rows;
  const last = visible[visible.length - 1];
  return { nodes: visible.map(map), pageInfo: { hasNextPage, endCursor: last ? encodeCursor(cursorOf(last)) : null } };
}

const toTenant = (r: Row): Tenant => ({
  id: r.id,
  name: r.name,
  status: r.status,
  suspendedReason: r.suspended_reason ?? null,
  suspendedAt: isoOrNull(r.suspended_at),
  createdAt: iso(r.created_at),
});
const toClient = (r: Row): Client => ({
  clientId: r.client_id,
  tenantId: r.tenant_id,
  secretHash: r.secret_hash,
  scopes: r.scopes,
  operator: r.operator,
  createdAt: iso(r.created_at),
});
const toFlow = (r: Row): Flow => ({
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
const toVersion = (r: Row): FlowVersion => ({
  tenantId: r.tenant_id,
  flowId: r.flow_id,
  version: r.version,
  document: r.document,
  publishedAt: iso(r.published_at),
});
const toVariable = (r: Row): Variable => ({
  name: r.name,
  value: r.value,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
const toSecretInfo = (r: Row): SecretInfo => ({
  name: r.name,
  keyId: r.key_id,
  fingerprint: r.fingerprint,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
const toDestination = (r: Row): Destination => ({
  name: r.name,
  type: r.type,
  settings: r.settings,
  credentialsSet: r.credentials_set,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
const toMessage = (r: Row): Message => ({
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
const toMessageInfo = (r: Row): MessageInfo => ({
  id: r.id,
  flowId: r.flow_id,
  flowVersion: r.flow_version,
  deliveryId: r.delivery_id,
  topic: r.topic,
  status: r.status,
  duplicateOf: r.duplicate_of,
  headers: r.headers,
  query: r.query,
  body: r.body_truncated ? null : r.body,
  bodyBytes: Number(r.body_bytes),
  bodyTruncated: r.body_truncated,
  receivedAt: iso(r.received_at),
  runId: r.run_id ?? null,
});
const toDataSpace = (r: Row): DataSpace => ({
  name: r.name,
  description: r.description ?? null,
  documents: Number(r.documents ?? 0),
  createdAt: iso(r.created_at),
});
const toDataDocument = (r: Row): DataDocument => ({
  key: r.key,
  value: r.value,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
const DATA_SPACES = `select s.*, (select count(*) from data_documents d where d.tenant_id = s.tenant_id and d.space = s.name) as documents from data_spaces s`;
const toRunLog = (r: Row): RunLog => ({
  id: String(r.seq),
  flowId: r.flow_id,
  runId: r.run_id,
  nodeId: r.node_id,
  level: r.level,
  message: r.message,
  data: r.data ?? null,
  loggedAt: iso(r.logged_at),
});
/** pino's numbers for the levels kept, so "warn and above" is a comparison. */
const SEVERITY = (level: string) =>
  `(case ${level} when 'info' then 30 when 'warn' then 40 when 'error' then 50 when 'fatal' then 60 end)`;
const toTenantAction = (r: Row): TenantAction => ({
  name: r.name,
  version: r.version,
  description: r.description ?? null,
  expression: r.expression,
  inputSchema: r.input_schema,
  outputSchema: r.output_schema,
  createdAt: iso(r.created_at),
});
const toUserSettings = (r: Row): UserSettings => ({
  subject: r.subject,
  settings: r.settings,
  updatedAt: iso(r.updated_at),
});
const toBlockedTopic = (r: Row): BlockedTopic => ({
  topic: r.topic,
  reason: r.reason,
  blockedAt: iso(r.blocked_at),
  held: Number(r.held ?? 0),
});
/** A message's status, from its latest run `r` (joined with LATEST_RUN). */
const MESSAGE_STATUS = `case when m.duplicate_of is not null then 'duplicate' when r.status = 'held' then 'blocked' when r.status = 'queued' then 'accepted'
    when r.status in ('running', 'waiting') then 'running' when r.status in ('succeeded', 'failed') then r.status else 'skipped' end`;
const LATEST_RUN = `left join lateral (
    select id, status, batch_id from runs where tenant_id = m.tenant_id and message_id = m.id order by id desc limit 1) r on true`;
/** Messages with their status: a view over messages, filtered by tenant ($1); bodies over $2 bytes are left out. */
const MESSAGE_INFO = `select * from (
    select m.id, m.flow_id, m.flow_version, m.delivery_id, m.topic, m.duplicate_of, m.headers, m.query, m.received_at,
      octet_length(m.body::text) as body_bytes, octet_length(m.body::text) > $2 as body_truncated, m.body, r.id as run_id, ${MESSAGE_STATUS} as status
    from messages m ${LATEST_RUN}
    where m.tenant_id = $1) info`;
const toRun = (r: Row): Run => ({
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
});
const toBatch = (r: Row): Batch => {
  const total = Number(r.total ?? 0);
  const unfinished = Number(r.unfinished ?? 0);
  return {
    tenantId: r.tenant_id,
    id: r.id,
    flowId: r.flow_id,
    flowVersion: r.flow_version,
    runId: r.run_id,
    nodeId: r.node_id,
    status: r.status,
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
    finishedAt: isoOrNull(r.finished_at),
  };
};
const toBatchTask = (r: Row): BatchTask => ({
  batchId: r.batch_id,
  key: r.key,
  runId: r.run_id,
  status: r.status,
  error: r.error,
  retries: r.retries,
});
const toIncrementalField = (r: Row): IncrementalField => ({
  flowId: r.flow_id,
  field: r.field,
  value: isoOrNull(r.value),
  movedAt: isoOrNull(r.moved_at),
  overlapMs: r.overlap_ms,
  updatedAt: iso(r.updated_at),
});
/** A batch with the counts of its tasks' latest runs. */
const BATCH_WITH_COUNTS = `select b.*, c.* from batches b cross join lateral (
    select count(*) as total,
      count(*) filter (where r.status in ('queued', 'running', 'waiting')) as unfinished,
      count(*) filter (where r.status = 'succeeded') as succeeded,
      count(*) filter (where r.status = 'failed') as failed,
      count(*) filter (where r.status in ('skipped', 'filtered', 'cancelled')) as skipped
    from batch_tasks t join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
    where t.tenant_id = b.tenant_id and t.batch_id = b.id) c`;

/**
 * What a run reads, as one row of the recordset `w` (columns READS_COLUMNS): the variables, secrets
 * and platform values it names, or all of them.
 */
function readsRow(tenantId: string, reads: RunReads) {
  const names = (wanted: Iterable<string> | '*') =>
    wanted === '*' ? { all: true, names: [] } : { all: false, names: [...wanted] };
  const [vars, secrets, platform] = [names(reads.vars), names(reads.secrets), names(reads.platform)];
  return {
    tenant_id: tenantId,
    all_vars: vars.all,
    vars: vars.names,
    all_secrets: secrets.all,
    secrets: secrets.names,
    reads_platform: platform.all || platform.names.length > 0,
    all_platform: platform.all,
    platform: platform.names,
  };
}
/** The runs a group names ($1 tenants, $2 run ids, in pairs), as rows `k`: see beginRuns for why unnest of sub-selects. */
const RUN_KEYS = 'unnest((select $1::text[]), (select $2::uuid[])) as k(tenant_id, run_id)';
const READS_COLUMNS =
  'tenant_id text, all_vars boolean, vars text[], all_secrets boolean, secrets text[], reads_platform boolean, all_platform boolean, platform text[]';

/**
 * The columns `vars`, `sealed_secrets` and `platform` of what the run of row `w` reads.
 * `$platform` is the tenant's override of each name, else the platform's value; most flows read
 * none, and then the statement does not look.
 */
const RUN_CONTEXT = `(select coalesce(jsonb_object_agg(v.name, v.value), '{}'::jsonb) from variables v
        where v.tenant_id = w.tenant_id and (w.all_vars or v.name = any(w.vars))) as vars,
      (select coalesce(jsonb_agg(jsonb_build_object('name', x.name, 'keyId', x.key_id, 'ciphertext', x.ciphertext, 'fingerprint', x.fingerprint)), '[]'::jsonb)
         from secrets x where x.tenant_id = w.tenant_id and (w.all_secrets or x.name = any(w.secrets))) as sealed_secrets,
      case when w.reads_platform then (select coalesce(jsonb_object_agg(name, value), '{}'::jsonb) from (
         select coalesce(t.name, p.name) as name, coalesce(t.value, p.value) as value
           from (select name, value from platform_globals where w.all_platform or name = any(w.platform)) p
           full join (select name, value from platform_tenant_globals where tenant_id = w.tenant_id and (w.all_platform or name = any(w.platform))) t
             on t.name = p.name) resolved) else '{}'::jsonb end as platform`;

const toStep = (r: Row): Step => ({
  runId: r.run_id,
  key: r.key,
  nodeId: r.node_id,
  status: r.status,
  attempts: r.attempts,
  output: r.output,
  error: r.error,
  startedAt: iso(r.started_at),
  finishedAt: isoOrNull(r.finished_at),
});

const isUniqueViolation = (error: unknown) => (error as { code?: string })?.code === '23505';

/** The store on PostgreSQL's dialect: the same SQL runs on PGlite and on a PostgreSQL server. */
export class SqlStore implements Store {
  constructor(private readonly db: SqlDriver) {}

  static async open(db: SqlDriver): Promise<SqlStore> {
    await migrate(db);
    return new SqlStore(db);
  }

  async ping() {
    await this.db.query('select 1');
  }

  close() {
    return this.db.close();
  }

  // --- tenants, clients, signing keys -------------------------------------------------------

  async createTenant(tenant: { id: string; name: string }) {
    try {
      const [row] = await this.db.query('insert into tenants (id, name) values ($1, $2) returning *', [
        tenant.id,
        tenant.name,
      ]);
      return toTenant(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(`tenant ${tenant.id} exists already`);
      throw error;
    }
  }

  async getTenant(id: string) {
    const [row] = await this.db.query('select * from tenants where id = $1', [id]);
    return row ? toTenant(row) : undefined;
  }

  async listTenants(filter: { status?: Tenant['status'] }, request: PageRequest) {
    const rows = await this.db.query(
      'select * from tenants where ($1::text is null or status = $1) and ($2::text is null or id > $2) order by id limit $3',
      [filter.status ?? null, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toTenant, (r) => r.id);
  }

  async setTenantStatus(id: string, status: Tenant['status'], reason: string | null) {
    const [row] = await this.db.query(
      `update tenants set status = $2, suspended_reason = case when $2 = 'suspended' then $3 end,
         suspended_at = case when $2 = 'suspended' then coalesce(suspended_at, now()) end where id = $1 returning *`,
      [id, status, reason],
    );
    return row ? toTenant(row) : undefined;
  }

  async deleteTenant(id: string) {
    // Every tenant-owned table references tenants (or a table that does) with on delete cascade.
    return (await this.db.query('delete from tenants where id = $1 returning id', [id])).length > 0;
  }

  async createClient(client: Omit<Client, 'createdAt'>) {
    const [row] = await this.db.query(
      'insert into clients (client_id, tenant_id, secret_hash, scopes, operator) values ($1, $2, $3, $4::jsonb, $5) returning *',
      [client.clientId, client.tenantId, client.secretHash, json(client.scopes), client.operator],
    );
    return toClient(row);
  }

  async getClient(clientId: string) {
    const [row] = await this.db.query('select * from clients where client_id = $1', [clientId]);
    return row ? toClient(row) : undefined;
  }

  async listSigningKeys(): Promise<SigningKey[]> {
    const rows = await this.db.query('select * from signing_keys order by created_at desc');
    return rows.map((r: Row) => ({
      kid: r.kid,
      sealedPrivateJwk: r.sealed_private_jwk,
      publicJwk: r.public_jwk,
      createdAt: iso(r.created_at),
    }));
  }

  async addSigningKey(key: Omit<SigningKey, 'createdAt'>) {
    await this.db.query(
      'insert into signing_keys (kid, sealed_private_jwk, public_jwk) values ($1, $2::jsonb, $3::jsonb) on conflict do nothing',
      [key.kid, json(key.sealedPrivateJwk), json(key.publicJwk)],
    );
  }

  // --- flows ----------------------------------------------------------------------------------

  async createFlow(tenantId: string, flow: { id: string; key: string; name: string; draft: FlowDocument }) {
    try {
      const [row] = await this.db.query(
        'insert into flows (tenant_id, id, key, name, draft) values ($1, $2, $3, $4, $5::jsonb) returning *',
        [tenantId, flow.id, flow.key, flow.name, json(flow.draft)],
      );
      return toFlow(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(`a flow with key "${flow.key}" exists already`);
      throw error;
    }
  }

  async getFlow(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select * from flows where tenant_id = $1 and id = $2', [tenantId, id]);
    return row ? toFlow(row) : undefined;
  }

  async findFlowByKey(tenantId: string, key: string) {
    const [row] = await this.db.query('select * from flows where tenant_id = $1 and key = $2', [tenantId, key]);
    return row ? toFlow(row) : undefined;
  }

  async listFlows(tenantId: string, filter: { published?: boolean }, request: PageRequest) {
    const rows = await this.db.query(
      `select * from flows where tenant_id = $1 and ($2::uuid is null or id > $2::uuid)
         and ($3::boolean is null or (latest_version is not null) = $3) order by id limit $4`,
      [tenantId, decodeCursor(request.after, UUID), filter.published ?? null, request.first + 1],
    );
    return page(rows, request, toFlow, (r) => r.id);
  }

  async replaceDraft(tenantId: string, id: string, expectedRevision: number, draft: FlowDocument) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const [row] = await this.db.query(
      `update flows set draft = $4::jsonb, name = $5, revision = revision + 1, updated_at = now()
        where tenant_id = $1 and id = $2 and revision = $3 and key = $6 returning *`,
      [tenantId, id, expectedRevision, json(draft), draft.name, draft.key],
    );
    if (row) return toFlow(row);
    throw await this.missingOrStale(tenantId, id, expectedRevision, draft.key);
  }

  private async missingOrStale(tenantId: string, id: string, expectedRevision: number, key?: string) {
    const current = await this.getFlow(tenantId, id);
    if (!current) return new NotFoundError(`no flow ${id}`);
    if (key !== undefined && key !== current.key)
      return new ConflictError(`the key of flow ${id} is "${current.key}" and cannot change`);
    return new ConflictError(
      `the flow is at revision ${current.revision}, not ${expectedRevision}: read it again and reapply your change`,
    );
  }

  async deleteFlow(tenantId: string, id: string) {
    if (!isUuid(id)) return false;
    const rows = await this.db.query('delete from flows where tenant_id = $1 and id = $2 returning id', [tenantId, id]);
    return rows.length > 0;
  }

  async publishFlow(tenantId: string, id: string, expectedRevision: number | undefined, document: FlowDocument) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const version = await this.db.transaction(async (tx) => {
      const [flow] = await tx.query(
        `update flows set latest_version = coalesce(latest_version, 0) + 1, active_version = coalesce(latest_version, 0) + 1,
                active = true, updated_at = now()
          where tenant_id = $1 and id = $2 and ($3::integer is null or revision = $3) returning latest_version`,
        [tenantId, id, expectedRevision ?? null],
      );
      if (!flow) return undefined;
      const [row] = await tx.query(
        'insert into flow_versions (tenant_id, flow_id, version, document) values ($1, $2, $3, $4::jsonb) returning *',
        [tenantId, id, flow.latest_version, json(document)],
      );
      return toVersion(row);
    });
    // Diagnosed after the transaction: PGlite runs one statement at a time and would wait on itself.
    if (!version) throw await this.missingOrStale(tenantId, id, expectedRevision ?? 0);
    return version;
  }

  async setFlowActive(tenantId: string, id: string, active: boolean) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const [row] = await this.db.query(
      'update flows set active = $3, updated_at = now() where tenant_id = $1 and id = $2 and active_version is not null returning *',
      [tenantId, id, active],
    );
    if (row) return toFlow(row);
    if (await this.getFlow(tenantId, id))
      throw new ConflictError('the flow has no published version yet: publish it first');
    throw new NotFoundError(`no flow ${id}`);
  }

  async getFlowVersion(tenantId: string, flowId: string, version: number) {
    if (!isUuid(flowId)) return undefined;
    const [row] = await this.db.query(
      'select * from flow_versions where tenant_id = $1 and flow_id = $2 and version = $3',
      [tenantId, flowId, version],
    );
    return row ? toVersion(row) : undefined;
  }

  async listFlowVersions(tenantId: string, flowId: string, request: PageRequest) {
    if (!isUuid(flowId)) return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const after = decodeCursor(request.after, /^\d{1,9}$/);
    const rows = await this.db.query(
      `select * from flow_versions where tenant_id = $1 and flow_id = $2 and ($3::integer is null or version < $3::integer)
        order by version desc limit $4`,
      [tenantId, flowId, after === null ? null : Number(after), request.first + 1],
    );
    return page(rows, request, toVersion, (r) => String(r.version));
  }

  // --- variables and secrets ------------------------------------------------------------------

  async putPlatformValue({ tenantId }: PlatformScope, name: string, value: unknown) {
    const [row] =
      tenantId === null
        ? await this.db.query(
            `insert into platform_globals (name, value) values ($1, $2::jsonb)
         on conflict (name) do update set value = excluded.value, updated_at = now() returning *, (xmax = 0) as created`,
            [name, json(value)],
          )
        : await this.db.query(
            `insert into platform_tenant_globals (tenant_id, name, value) values ($1, $2, $3::jsonb)
         on conflict (tenant_id, name) do update set value = excluded.value, updated_at = now() returning *, (xmax = 0) as created`,
            [tenantId, name, json(value)],
          );
    return { variable: toVariable(row), created: row.created };
  }

  async getPlatformValue({ tenantId }: PlatformScope, name: string) {
    const [row] =
      tenantId === null
        ? await this.db.query('select * from platform_globals where name = $1', [name])
        : await this.db.query('select * from platform_tenant_globals where tenant_id = $1 and name = $2', [
            tenantId,
            name,
          ]);
    return row ? toVariable(row) : undefined;
  }

  async listPlatformValues({ tenantId }: PlatformScope, request: PageRequest) {
    const rows =
      tenantId === null
        ? await this.db.query(
            'select * from platform_globals where ($1::text is null or name > $1) order by name limit $2',
            [decodeCursor(request.after), request.first + 1],
          )
        : await this.db.query(
            'select * from platform_tenant_globals where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3',
            [tenantId, decodeCursor(request.after), request.first + 1],
          );
    return page(rows, request, toVariable, (r) => r.name);
  }

  async deletePlatformValue({ tenantId }: PlatformScope, name: string) {
    const rows =
      tenantId === null
        ? await this.db.query('delete from platform_globals where name = $1 returning name', [name])
        : await this.db.query('delete from platform_tenant_globals where tenant_id = $1 and name = $2 returning name', [
            tenantId,
            name,
          ]);
    return rows.length > 0;
  }

  async putVariable(tenantId: string, name: string, value: unknown) {
    const [row] = await this.db.query(
      `insert into variables (tenant_id, name, value) values ($1, $2, $3::jsonb)
       on conflict (tenant_id, name) do update set value = excluded.value, updated_at = now()
       returning *, (xmax = 0) as created`,
      [tenantId, name, json(value)],
    );
    return { variable: toVariable(row), created: row.created };
  }

  async getVariable(tenantId: string, name: string) {
    const [row] = await this.db.query('select * from variables where tenant_id = $1 and name = $2', [tenantId, name]);
    return row ? toVariable(row) : undefined;
  }

  async listVariables(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      'select * from variables where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3',
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toVariable, (r) => r.name);
  }

  async deleteVariable(tenantId: string, name: string) {
    return (
      (await this.db.query('delete from variables where tenant_id = $1 and name = $2 returning name', [tenantId, name]))
        .length > 0
    );
  }

  async putSecret(tenantId: string, name: string, sealed: SealedValue) {
    const [row] = await this.db.query(
      `insert into secrets (tenant_id, name, key_id, ciphertext, fingerprint) values ($1, $2, $3, $4, $5)
       on conflict (tenant_id, name) do update set key_id = excluded.key_id, ciphertext = excluded.ciphertext,
         fingerprint = excluded.fingerprint, updated_at = now()
       returning name, key_id, fingerprint, created_at, updated_at, (xmax = 0) as created`,
      [tenantId, name, sealed.keyId, sealed.ciphertext, sealed.fingerprint],
    );
    return { secret: toSecretInfo(row), created: row.created };
  }

  async listSecrets(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select name, key_id, fingerprint, created_at, updated_at from secrets
        where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toSecretInfo, (r) => r.name);
  }

  async deleteSecret(tenantId: string, name: string) {
    return (
      (await this.db.query('delete from secrets where tenant_id = $1 and name = $2 returning name', [tenantId, name]))
        .length > 0
    );
  }

  async sealedSecrets(tenantId: string, names: Iterable<string>) {
    const rows = await this.db.query<Row>(
      'select name, key_id, ciphertext, fingerprint from secrets where tenant_id = $1 and name = any($2::text[])',
      [tenantId, [...names]],
    );
    return rows.map((r) => ({ name: r.name, keyId: r.key_id, ciphertext: r.ciphertext, fingerprint: r.fingerprint }));
  }

  // --- destinations ---------------------------------------------------------------------------

  async putDestination(tenantId: string, destination: NewDestination) {
    const [row] = await this.db.query(
      `insert into destinations (tenant_id, name, type, settings, credentials_set, sealed_credentials) values ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb)
       on conflict (tenant_id, name) do update set type = excluded.type, settings = excluded.settings, credentials_set = excluded.credentials_set,
         sealed_credentials = excluded.sealed_credentials, updated_at = now()
       returning name, type, settings, credentials_set, created_at, updated_at, (xmax = 0) as created`,
      [
        tenantId,
        destination.name,
        destination.type,
        json(destination.settings),
        json(destination.credentialsSet),
        json(destination.sealedCredentials),
      ],
    );
    return { destination: toDestination(row), created: row.created };
  }

  async getDestination(tenantId: string, name: string) {
    const [row] = await this.db.query(
      'select name, type, settings, credentials_set, created_at, updated_at from destinations where tenant_id = $1 and name = $2',
      [tenantId, name],
    );
    return row ? toDestination(row) : undefined;
  }

  async getSealedDestination(tenantId: string, name: string) {
    const [row] = await this.db.query(
      'select name, type, settings, credentials_set, sealed_credentials, created_at, updated_at from destinations where tenant_id = $1 and name = $2',
      [tenantId, name],
    );
    return row
      ? { destination: toDestination(row), sealedCredentials: row.sealed_credentials as SealedValue }
      : undefined;
  }

  async listDestinations(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select name, type, settings, credentials_set, created_at, updated_at from destinations
        where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toDestination, (r) => r.name);
  }

  async deleteDestination(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from destinations where tenant_id = $1 and name = $2 returning name', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }

  // --- messages, runs, steps ------------------------------------------------------------------

  async acceptMessages(batch: Array<{ message: NewMessage; runId: string }>): Promise<AcceptedMessage[]> {
    const rows = batch.map(({ message, runId }) => ({
      tenant_id: message.tenantId,
      id: message.id,
      flow_id: message.flowId,
      flow_version: message.flowVersion,
      delivery_id: message.deliveryId,
      topic: message.topic,
      body: message.body ?? null,
      headers: message.headers,
      query: message.query,
      run_id: runId,
    }));
    // One statement for the whole batch: messages and their runs are written together or not at all.
    // The rows that hold a run are read FOR SHARE: a resume or an unblock waits for this statement,
    // so the runs it holds are there for the release that follows.
    const inserted = await this.db.query(
      `with input as (
         select * from jsonb_to_recordset($1::jsonb) as x(tenant_id text, id uuid, flow_id uuid, flow_version integer,
           delivery_id text, topic text, body jsonb, headers jsonb, query jsonb, run_id uuid)
       ), suspended as (
         select id from tenants where id in (select tenant_id from input) and status = 'suspended' for share
       ), blocked as (
         select tenant_id, topic from blocked_topics where (tenant_id, topic) in (select tenant_id, topic from input) for share
       ), m as (
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, topic, body, headers, query)
         select tenant_id, id, flow_id, flow_version, delivery_id, topic, coalesce(body, 'null'::jsonb), headers, query from input
         on conflict (tenant_id, flow_id, delivery_id) do nothing returning tenant_id, id
       )
       insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, held_by)
       select i.tenant_id, i.run_id, i.flow_id, i.flow_version, i.id, case when hold.reason is null then 'queued' else 'held' end, hold.reason
         from input i join m on m.tenant_id = i.tenant_id and m.id = i.id
         cross join lateral (select case when exists (select 1 from suspended s where s.id = i.tenant_id) then 'suspended'
           when exists (select 1 from blocked b where b.tenant_id = i.tenant_id and b.topic = i.topic) then 'topic' end as reason) hold
       returning *`,
      [JSON.stringify(rows)],
    );
    const byMessage = new Map(inserted.map((row) => [row.message_id as string, toRun(row)]));
    const results: AcceptedMessage[] = [];
    for (const { message } of batch) {
      const run = byMessage.get(message.id);
      results.push(run ? { duplicate: false, messageId: message.id, run } : await this.recordDuplicate(message));
    }
    return results;
  }

  /** Record a repeated delivery (without its body) and return the first one's run. */
  private async recordDuplicate(message: NewMessage): Promise<AcceptedMessage> {
    const [first] = await this.db.query(
      `with first as (
         select r.* from messages m join runs r on r.tenant_id = m.tenant_id and r.message_id = m.id
          where m.tenant_id = $1 and m.flow_id = $2 and m.delivery_id = $3 order by r.id limit 1
       ), recorded as (
         insert into messages (tenant_id, id, flow_id, flow_version, topic, body, headers, query, duplicate_of)
         select $1, $4, $2, flow_version, $5, 'null'::jsonb, $6::jsonb, $7::jsonb, message_id from first
       )
       select * from first`,
      [
        message.tenantId,
        message.flowId,
        message.deliveryId,
        message.id,
        message.topic,
        json(message.headers),
        json(message.query),
      ],
    );
    return { duplicate: true, messageId: first.message_id, run: toRun(first) };
  }

  /**
   * Workers begin and checkpoint runs through group commits: under load one statement serves the
   * runs of many jobs at once (idle, a run goes alone and at once). One statement of each kind in
   * flight makes the largest groups: a statement's cost is mostly its round trip and commit.
   */
  private readonly begins = new GroupCommit<{ tenantId: string; runId: string; reads: RunReads }, RunState | undefined>(
    (items) => this.beginRuns(items),
    { maxBatch: 100, maxInFlight: 1 },
  );
  private readonly saves = new GroupCommit<ProgressSave, boolean>((items) => this.saveProgresses(items), {
    maxBatch: 100,
    maxInFlight: 1,
  });

  async beginRun(
    tenantId: string,
    runId: string,
    reads: RunReads = { vars: [], secrets: [], platform: [] },
  ): Promise<RunState | undefined> {
    if (!isUuid(runId)) return undefined;
    return this.begins.submit({ tenantId, runId, reads });
  }

  /** Marks each run running (unless finished) and reads it with its message, its checkpoints and what it reads. */
  private async beginRuns(
    items: Array<{ tenantId: string; runId: string; reads: RunReads }>,
  ): Promise<Array<RunState | undefined>> {
    // Runs are found by unnest(), so the planner looks each up by its key (a recordset, estimated at 100 rows,
    // is hashed against a scan of the table). Its arrays are sub-selects so that the plan does not depend on
    // their length: PostgreSQL then keeps one generic plan instead of planning each call anew.
    const rows = await this.db.query(
      `with started as (
         update runs r set status = 'running', attempts = r.attempts + 1, started_at = coalesce(r.started_at, now())
           from ${RUN_KEYS}
          where r.tenant_id = k.tenant_id and r.id = k.run_id and r.status not in ${TERMINAL}
         returning r.*
       ), run as (
         select * from started
         union all
         select r.* from ${RUN_KEYS} join runs r on r.tenant_id = k.tenant_id and r.id = k.run_id
          where not exists (select 1 from started s where s.tenant_id = r.tenant_id and s.id = r.id)
       )
       select w.i, to_jsonb(run.*) as run,
              (select to_jsonb(m.*) from messages m where m.tenant_id = run.tenant_id and m.id = run.message_id) as message,
              coalesce((select jsonb_agg(to_jsonb(s.*) order by s.seq) from steps s where s.tenant_id = run.tenant_id and s.run_id = run.id), '[]'::jsonb) as steps,
              ${RUN_CONTEXT}
         from run join jsonb_to_recordset($3::jsonb) as w(i integer, run_id uuid, ${READS_COLUMNS}) on w.tenant_id = run.tenant_id and w.run_id = run.id`,
      [
        items.map((item) => item.tenantId),
        items.map((item) => item.runId),
        JSON.stringify(items.map((item, i) => ({ i, run_id: item.runId, ...readsRow(item.tenantId, item.reads) }))),
      ],
    );
    const states: Array<RunState | undefined> = new Array(items.length).fill(undefined);
    for (const row of rows) {
      // A run always has its message (the message's deletion takes its runs along).
      states[row.i] = {
        run: toRun(row.run),
        message: toMessage(row.message),
        steps: (row.steps as Row[]).map(toStep),
        vars: row.vars,
        sealedSecrets: row.sealed_secrets,
        platform: row.platform,
      };
    }
    return states;
  }

  async readRunContext(tenantId: string, reads: RunReads) {
    const [row] = await this.db.query(
      `select ${RUN_CONTEXT} from jsonb_to_recordset($1::jsonb) as w(${READS_COLUMNS})`,
      [JSON.stringify([readsRow(tenantId, reads)])],
    );
    return { vars: row.vars, sealedSecrets: row.sealed_secrets, platform: row.platform };
  }

  async saveProgress(
    tenantId: string,
    runId: string,
    steps: Step[],
    outcome?: RunOutcome,
    logs?: RunLogAppend,
  ): Promise<boolean> {
    if (!isUuid(runId)) return false;
    return this.saves.submit({ tenantId, runId, steps, outcome, logs });
  }

  /** Writes each run's checkpoints and log lines, and its status when it has an outcome; true for each run whose status changed. */
  private async saveProgresses(items: ProgressSave[]): Promise<boolean[]> {
    // Rows keep their order (a run's steps are numbered in it), so each carries its run instead of joining to it.
    const steps = items.flatMap((item) =>
      item.steps.map((step) => ({
        tenant_id: item.tenantId,
        run_id: item.runId,
        key: step.key,
        node_id: step.nodeId,
        status: step.status,
        attempts: step.attempts,
        output: step.output ?? null,
        error: step.error,
        started_at: step.startedAt,
        finished_at: step.finishedAt,
      })),
    );
    const lines = items.flatMap((item) =>
      (item.logs?.lines ?? []).map((line, index) => ({
        tenant_id: item.tenantId,
        run_id: item.runId,
        flow_id: item.logs!.flowId,
        n: index + 1,
        log_limit: item.logs!.perRunLimit,
        node_id: line.nodeId,
        level: line.level,
        message: line.message,
        data: line.data ?? null,
        logged_at: line.loggedAt,
      })),
    );
    const updated = await this.db.query<{ i: number }>(
      `with logged as (
         -- A run keeps at most log_limit lines: later ones are dropped.
         insert into run_logs (tenant_id, flow_id, run_id, node_id, severity, level, message, data, logged_at)
         select l.tenant_id, l.flow_id, l.run_id, l.node_id, ${SEVERITY('l.level')}, l.level, l.message, l.data, l.logged_at
           from jsonb_to_recordset($3::jsonb) as l(tenant_id text, run_id uuid, flow_id uuid, n integer, log_limit integer, node_id text, level text,
                message text, data jsonb, logged_at timestamptz)
          where l.n + (select count(*) from run_logs x where x.tenant_id = l.tenant_id and x.run_id = l.run_id) <= l.log_limit
       ), saved as (
         insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at)
         select tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at
           from jsonb_to_recordset($2::jsonb) as x(tenant_id text, run_id uuid, key text, node_id text, status text, attempts integer, output jsonb, error jsonb,
                started_at timestamptz, finished_at timestamptz)
         on conflict (tenant_id, run_id, key) do update set status = excluded.status, attempts = excluded.attempts,
           output = excluded.output, error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at
         returning 1
       )
       -- unnest() of sub-selects, as in beginRuns: each run looked up by its key, one plan for any batch.
       update runs r set status = o.status, error = o.error, finished_at = case when o.status = 'waiting' then null else now() end
         from unnest((select $1::text[]), (select $4::uuid[]), (select $5::text[]), (select $6::jsonb[])) with ordinality as o(tenant_id, run_id, status, error, i)
        where r.tenant_id = o.tenant_id and r.id = o.run_id and o.status is not null and r.status not in ${TERMINAL}
       returning o.i`,
      [
        items.map((item) => item.tenantId),
        JSON.stringify(steps),
        JSON.stringify(lines),
        items.map((item) => item.runId),
        items.map((item) => item.outcome?.status ?? null),
        items.map((item) => (item.outcome ? json(item.outcome.error) : null)),
      ],
    );
    const changed = new Array<boolean>(items.length).fill(false);
    for (const row of updated) changed[Number(row.i) - 1] = true;
    return changed;
  }

  async getRun(tenantId: string, runId: string) {
    if (!isUuid(runId)) return undefined;
    const [run] = await this.db.query('select * from runs where tenant_id = $1 and id = $2', [tenantId, runId]);
    if (!run) return undefined;
    const steps = await this.db.query('select * from steps where tenant_id = $1 and run_id = $2 order by seq', [
      tenantId,
      runId,
    ]);
    return { run: toRun(run), steps: steps.map(toStep) };
  }

  async hasUnfinishedRun(tenantId: string, flowId: string) {
    const rows = await this.db.query(
      `select 1 from runs where tenant_id = $1 and flow_id = $2 and status in ('queued', 'running', 'waiting') limit 1`,
      [tenantId, flowId],
    );
    return rows.length > 0;
  }

  // --- batches ---------------------------------------------------------------------------------

  async createBatch(tenantId: string, batch: NewBatch) {
    await this.db.query(
      `insert into batches (tenant_id, id, flow_id, flow_version, run_id, node_id, status, window_from, window_to)
       values ($1, $2, $3, $4, $5, $6, 'importing', $7, $8)`,
      [
        tenantId,
        batch.id,
        batch.flowId,
        batch.flowVersion,
        batch.runId,
        batch.nodeId,
        batch.windowFrom,
        batch.windowTo,
      ],
    );
    return (await this.getBatch(tenantId, batch.id))!;
  }

  async getBatch(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query(`${BATCH_WITH_COUNTS} where b.tenant_id = $1 and b.id = $2`, [tenantId, id]);
    return row ? toBatch(row) : undefined;
  }

  async listBatches(tenantId: string, filter: { flowId?: string; status?: BatchStatus }, request: PageRequest) {
    if (filter.flowId !== undefined && !isUuid(filter.flowId))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const rows = await this.db.query(
      `${BATCH_WITH_COUNTS} where b.tenant_id = $1 and ($2::uuid is null or b.flow_id = $2::uuid) and ($3::text is null or b.status = $3)
         and ($4::uuid is null or b.id < $4::uuid) order by b.id desc limit $5`,
      [tenantId, filter.flowId ?? null, filter.status ?? null, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toBatch, (r) => r.id);
  }

  async setBatchStatus(tenantId: string, id: string, status: BatchStatus) {
    await this.db.query(
      `update batches set status = $3, finished_at = case when $3 in ('succeeded', 'failed') then now() else null end where tenant_id = $1 and id = $2`,
      [tenantId, id, status],
    );
  }

  async addBatchTasks(tenantId: string, batchId: string, items: NewBatchTask[]) {
    if (items.length === 0) return [];
    const rows = items.map((item) => ({
      key: item.key,
      item: item.item ?? null,
      message_id: item.messageId,
      run_id: item.runId,
    }));
    const inserted = await this.db.query(
      `with input as (
         select * from jsonb_to_recordset($3::jsonb) as x(key text, item jsonb, message_id uuid, run_id uuid)
       ), b as (
         select * from batches where tenant_id = $1 and id = $2
       ), task as (
         insert into batch_tasks (tenant_id, batch_id, key, run_id)
         select $1, $2, key, run_id from input on conflict (tenant_id, batch_id, key) do nothing returning key
       ), fresh as (
         select i.*, b.flow_id, b.flow_version, b.node_id from input i join task t on t.key = i.key cross join b
       ), m as (
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, topic, body, headers, query)
         select $1, message_id, flow_id, flow_version, 'batch:' || $2 || ':' || key, 'poll', coalesce(item, 'null'::jsonb), '{}', '{}' from fresh
       ), s as (
         insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at)
         select $1, run_id, node_id, node_id, 'succeeded', 1, item, null, now(), now() from fresh
       ), r as (
         insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, batch_id)
         select $1, run_id, flow_id, flow_version, message_id, 'queued', $2 from fresh
         returning *
       )
       select * from r
       -- Items the batch held already whose run never reached the queue (an enqueue that failed): queued again.
       union all
       select q.* from input i join batch_tasks t on t.tenant_id = $1 and t.batch_id = $2 and t.key = i.key
         join runs q on q.tenant_id = $1 and q.id = t.run_id where q.status = 'queued'`,
      [tenantId, batchId, JSON.stringify(rows)],
    );
    return inserted.map(toRun);
  }

  async listBatchTasks(tenantId: string, batchId: string, filter: { status?: RunStatus }, request: PageRequest) {
    if (!isUuid(batchId)) return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const after = decodeCursor(request.after, /^\d{1,19}$/);
    const rows = await this.db.query(
      `select t.seq, t.batch_id, t.key, t.run_id, t.retries, r.status, r.error from batch_tasks t join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
        where t.tenant_id = $1 and t.batch_id = $2 and ($3::text is null or r.status = $3) and ($4::bigint is null or t.seq > $4::bigint)
        order by t.seq limit $5`,
      [tenantId, batchId, filter.status ?? null, after, request.first + 1],
    );
    return page(rows, request, toBatchTask, (r) => String(r.seq));
  }

  async retryFailedTasks(tenantId: string, batchId: string, newId: () => string) {
    if (!isUuid(batchId)) return [];
    const failed = await this.db.query(
      `select t.key, t.run_id from batch_tasks t join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
        where t.tenant_id = $1 and t.batch_id = $2 and r.status = 'failed' order by t.seq`,
      [tenantId, batchId],
    );
    if (failed.length === 0) return [];
    const rows = failed.map((row) => ({ key: row.key, old_run: row.run_id, run_id: newId(), message_id: newId() }));
    // The new run starts from the failed one's message and fan-out checkpoint; the failed run stays as it was.
    const inserted = await this.db.query(
      `with input as (
         select * from jsonb_to_recordset($3::jsonb) as x(key text, old_run uuid, run_id uuid, message_id uuid)
       ), task as (
         update batch_tasks t set run_id = i.run_id, retries = retries + 1 from input i
          where t.tenant_id = $1 and t.batch_id = $2 and t.key = i.key and t.run_id = i.old_run returning t.key, t.retries
       ), fresh as (
         select i.*, t.retries, r.flow_id, r.flow_version, m.body, b.node_id from input i join task t on t.key = i.key
           join runs r on r.tenant_id = $1 and r.id = i.old_run join messages m on m.tenant_id = $1 and m.id = r.message_id
           join batches b on b.tenant_id = $1 and b.id = $2
       ), m as (
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, body, headers, query)
         select $1, message_id, flow_id, flow_version, 'batch:' || $2 || ':' || key || ':retry:' || retries, body, '{}', '{}' from fresh
       ), s as (
         insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at)
         select $1, f.run_id, f.node_id, f.node_id, 'succeeded', 1, st.output, null, now(), now()
           from fresh f join steps st on st.tenant_id = $1 and st.run_id = f.old_run and st.key = f.node_id
       )
       insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, batch_id)
       select $1, run_id, flow_id, flow_version, message_id, 'queued', $2 from fresh
       returning *`,
      [tenantId, batchId, JSON.stringify(rows)],
    );
    if (inserted.length > 0) await this.setBatchStatus(tenantId, batchId, 'running');
    return inserted.map(toRun);
  }

  // --- incremental fields ----------------------------------------------------------------------

  async getIncrementalField(tenantId: string, flowId: string) {
    if (!isUuid(flowId)) return undefined;
    const [row] = await this.db.query('select * from incremental_fields where tenant_id = $1 and flow_id = $2', [
      tenantId,
      flowId,
    ]);
    return row ? toIncrementalField(row) : undefined;
  }

  async listIncrementalFields(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select * from incremental_fields where tenant_id = $1 and ($2::uuid is null or flow_id > $2::uuid) order by flow_id limit $3`,
      [tenantId, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toIncrementalField, (r) => r.flow_id);
  }

  async putIncrementalField(
    tenantId: string,
    flowId: string,
    field: { field: string; value: string | null; overlapMs: number },
  ) {
    const [row] = await this.db.query(
      `insert into incremental_fields (tenant_id, flow_id, field, value, moved_at, overlap_ms) values ($1, $2, $3, $4, case when $4::timestamptz is null then null else now() end, $5)
       on conflict (tenant_id, flow_id) do update set field = excluded.field, value = excluded.value, overlap_ms = excluded.overlap_ms, updated_at = now(),
         moved_at = case when incremental_fields.value is distinct from excluded.value then now() else incremental_fields.moved_at end
       returning *`,
      [tenantId, flowId, field.field, field.value, field.overlapMs],
    );
    return toIncrementalField(row);
  }

  async deleteIncrementalField(tenantId: string, flowId: string) {
    if (!isUuid(flowId)) return false;
    return (
      (
        await this.db.query('delete from incremental_fields where tenant_id = $1 and flow_id = $2 returning flow_id', [
          tenantId,
          flowId,
        ])
      ).length > 0
    );
  }

  async listRuns(tenantId: string, filter: { flowId?: string; status?: RunStatus }, request: PageRequest) {
    if (filter.flowId !== undefined && !isUuid(filter.flowId))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const rows = await this.db.query(
      `select * from runs where tenant_id = $1 and ($2::uuid is null or flow_id = $2::uuid) and ($3::text is null or status = $3)
         and ($4::uuid is null or id < $4::uuid) order by id desc limit $5`,
      [tenantId, filter.flowId ?? null, filter.status ?? null, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toRun, (r) => r.id);
  }

  // --- messages, held runs, blocked topics -----------------------------------------------------

  async listMessages(tenantId: string, filter: MessageFilter, request: PageRequest, bodyCapBytes: number) {
    if (filter.flowId !== undefined && !isUuid(filter.flowId))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const rows = await this.db.query(
      `${MESSAGE_INFO} where ($3::uuid is null or flow_id = $3::uuid) and ($4::text is null or status = $4) and ($5::text is null or topic = $5)
         and ($6::timestamptz is null or received_at >= $6::timestamptz) and ($7::timestamptz is null or received_at < $7::timestamptz)
         and ($8::uuid is null or id < $8::uuid) order by id desc limit $9`,
      [
        tenantId,
        bodyCapBytes,
        filter.flowId ?? null,
        filter.status ?? null,
        filter.topic ?? null,
        filter.receivedFrom ?? null,
        filter.receivedTo ?? null,
        decodeCursor(request.after, UUID),
        request.first + 1,
      ],
    );
    return page(rows, request, toMessageInfo, (r) => r.id);
  }

  async getMessage(tenantId: string, id: string, bodyCapBytes: number) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query(`${MESSAGE_INFO} where id = $3`, [tenantId, bodyCapBytes, id]);
    if (!row) return undefined;
    const runs = await this.db.query('select * from runs where tenant_id = $1 and message_id = $2 order by id', [
      tenantId,
      row.duplicate_of ?? id,
    ]);
    return { message: toMessageInfo(row), runs: runs.map(toRun) };
  }

  async replayMessage(tenantId: string, messageId: string, runId: string) {
    if (!isUuid(messageId)) throw new NotFoundError(`no message ${messageId}`);
    const [row] = await this.db.query(
      `insert into runs (tenant_id, id, flow_id, flow_version, message_id, status)
       select $1, $3, f.id, f.active_version, m.id, 'queued' from messages m join flows f on f.tenant_id = m.tenant_id and f.id = m.flow_id
        where m.tenant_id = $1 and m.id = $2 and m.duplicate_of is null and f.active and f.active_version is not null
          and not exists (select 1 from runs r where r.tenant_id = $1 and r.message_id = $2
                            and (r.batch_id is not null or r.status in ('held', 'queued', 'running', 'waiting')))
       returning *`,
      [tenantId, messageId, runId],
    );
    if (row) return toRun(row);
    const found = await this.getMessage(tenantId, messageId, 0);
    if (!found) throw new NotFoundError(`no message ${messageId}`);
    const { message, runs } = found;
    if (message.duplicateOf)
      throw new ConflictError(`the message is a repeated delivery: replay the first one, ${message.duplicateOf}`);
    if (runs.some((run) => run.batchId !== null))
      throw new ConflictError("the message is a batch item: retry its batch's failed tasks instead");
    const latest = runs[runs.length - 1];
    if (latest && !isTerminal(latest.status))
      throw new ConflictError(
        `its run ${latest.id} is ${latest.status}; ${latest.status === 'held' ? 'release it' : 'wait for it to finish'}`,
      );
    throw new ConflictError("the message's flow has no active version");
  }

  async backlog(tenantId: string, since: string): Promise<Backlog> {
    const floor = idAt(Date.parse(since));
    const [row] = await this.db.query(
      `select
         (select coalesce(jsonb_object_agg(status, n), '{}') from (
            select status, count(*) as n from runs where tenant_id = $1 and status in ('held', 'queued', 'running', 'waiting') group by status
            union all
            select status, count(*) from runs where tenant_id = $1 and id >= $2::uuid and status not in ('held', 'queued', 'running', 'waiting') group by status) c) as runs,
         (select coalesce(jsonb_object_agg(status, n), '{}') from (
            select ${MESSAGE_STATUS} as status, count(*) as n from messages m ${LATEST_RUN} where m.tenant_id = $1 and m.id >= $2::uuid group by 1) c) as messages,
         (select to_jsonb(o) from (
            select id as "runId", flow_id as "flowId", status, created_at as "createdAt" from (
              (select * from runs where tenant_id = $1 and status = 'queued' order by id limit 1)
              union all (select * from runs where tenant_id = $1 and status = 'waiting' order by id limit 1)) w
            order by id limit 1) o) as oldest`,
      [tenantId, floor],
    );
    const count = <K extends string>(keys: readonly K[], counts: Record<string, unknown>) =>
      Object.fromEntries(keys.map((key) => [key, Number(counts[key] ?? 0)])) as Record<K, number>;
    const oldest = row.oldest as {
      runId: string;
      flowId: string;
      status: 'queued' | 'waiting';
      createdAt: string;
    } | null;
    return {
      since: new Date(since).toISOString(),
      runs: count(runStatuses, row.runs),
      messages: count(messageStatuses, row.messages),
      oldestWaiting: oldest && {
        ...oldest,
        createdAt: iso(oldest.createdAt),
        ageMs: Math.max(0, Date.now() - Date.parse(oldest.createdAt)),
      },
    };
  }

  async retryFailedRuns(tenantId: string, flowId: string, newId: () => string, limit: number) {
    if (!isUuid(flowId)) return { runs: [], more: false };
    // Messages of the flow whose latest run failed (not duplicates, not batch items: those have their own retry).
    const failed = await this.db.query(
      `select m.id from messages m ${LATEST_RUN}
        where m.tenant_id = $1 and m.flow_id = $2 and m.duplicate_of is null and r.status = 'failed' and r.batch_id is null order by m.id limit $3`,
      [tenantId, flowId, limit + 1],
    );
    const input = failed.slice(0, limit).map((row) => ({ message_id: row.id, run_id: newId() }));
    const inserted =
      input.length === 0
        ? []
        : await this.db.query(
            `insert into runs (tenant_id, id, flow_id, flow_version, message_id, status)
       select $1, i.run_id, f.id, f.active_version, i.message_id, 'queued'
         from jsonb_to_recordset($3::jsonb) as i(message_id uuid, run_id uuid)
         join flows f on f.tenant_id = $1 and f.id = $2 and f.active and f.active_version is not null
        where (select status from runs r where r.tenant_id = $1 and r.message_id = i.message_id order by r.id desc limit 1) = 'failed'
       returning *`,
            [tenantId, flowId, JSON.stringify(input)],
          );
    return { runs: inserted.map(toRun).sort((x, y) => (x.id < y.id ? -1 : 1)), more: failed.length > limit };
  }

  async statistics(tenantId: string, request: StatisticsRequest): Promise<Statistics> {
    if (request.flowId !== undefined && !isUuid(request.flowId)) return { ...request, runs: [], messages: [] };
    // Ids are time-ordered: a bound a minute wider than the range lets the primary key find the rows.
    const from = Date.parse(request.from);
    const to = Date.parse(request.to);
    const range = [tenantId, request.interval, request.from, request.to, idAt(from - 60_000), idAt(to + 60_000)];
    const percentilesOf = (values: number[] | null) =>
      values ? { p50: values[0], p95: values[1], p99: values[2] } : null;
    const [runs, messages] = await Promise.all([
      this.db.query(
        `select bucket, flow_id, jsonb_object_agg(status, n) filter (where status is not null) as counts, sum(n) as total,
                max(duration) as duration, max(latency) as latency
           from (
             select date_trunc($2, created_at, 'UTC') as bucket, flow_id, status, count(*) as n, null::float8[] as duration, null::float8[] as latency
               from runs where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and created_at >= $3 and created_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
               group by 1, 2, 3
             union all
             select date_trunc($2, created_at, 'UTC'), flow_id, null, 0,
                    percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from finished_at - coalesce(started_at, created_at)) * 1000),
                    percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from finished_at - created_at) * 1000)
               from runs where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and created_at >= $3 and created_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
                 and finished_at is not null
               group by 1, 2
           ) parts
          group by bucket, flow_id order by bucket, flow_id`,
        [...range, request.flowId ?? null],
      ),
      this.db.query(
        `select date_trunc($2, received_at, 'UTC') as bucket, topic, count(*) filter (where duplicate_of is null) as count, count(*) filter (where duplicate_of is not null) as duplicates
           from messages where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and received_at >= $3 and received_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
          group by 1, 2 order by 1, 2`,
        [...range, request.flowId ?? null],
      ),
    ]);
    return {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      interval: request.interval,
      runs: runs.map((r) => ({
        bucket: iso(r.bucket),
        flowId: r.flow_id,
        total: Number(r.total),
        counts: Object.fromEntries(
          Object.entries(r.counts as Record<string, unknown>).map(([status, n]) => [status, Number(n)]),
        ),
        durationMs: percentilesOf(r.duration),
        latencyMs: percentilesOf(r.latency),
      })),
      messages: messages.map((r) => ({
        bucket: iso(r.bucket),
        topic: r.topic,
        count: Number(r.count),
        duplicates: Number(r.duplicates),
      })),
    };
  }

  async flowHealth(tenantId: string) {
    const rows = await this.db.query(
      `select f.id, f.name, f.active, r.id as run_id, r.error, r.finished_at from flows f
         left join lateral (select id, error, finished_at from runs where tenant_id = f.tenant_id and flow_id = f.id and status = 'failed' order by id desc limit 1) r on true
        where f.tenant_id = $1 order by f.name`,
      [tenantId],
    );
    return {
      activeFlows: rows.filter((r) => r.active).length,
      lastErrors: rows
        .filter((r) => r.run_id)
        .map((r) => ({
          flowId: r.id,
          flowName: r.name,
          runId: r.run_id,
          error: r.error,
          finishedAt: isoOrNull(r.finished_at),
        })),
    };
  }

  async putDataSpace(tenantId: string, name: string, description: string | null) {
    const [row] = await this.db.query(
      `insert into data_spaces (tenant_id, name, description) values ($1, $2, $3)
       on conflict (tenant_id, name) do update set description = excluded.description returning *, (xmax = 0) as created`,
      [tenantId, name, description],
    );
    return {
      space: toDataSpace({ ...row, documents: row.created ? 0 : await this.countDocuments(tenantId, name) }),
      created: row.created,
    };
  }

  private async countDocuments(tenantId: string, space: string) {
    const [row] = await this.db.query('select count(*) as n from data_documents where tenant_id = $1 and space = $2', [
      tenantId,
      space,
    ]);
    return Number(row.n);
  }

  async getDataSpace(tenantId: string, name: string) {
    const [row] = await this.db.query(`${DATA_SPACES} where s.tenant_id = $1 and s.name = $2`, [tenantId, name]);
    return row ? toDataSpace(row) : undefined;
  }

  async listDataSpaces(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `${DATA_SPACES} where s.tenant_id = $1 and ($2::text is null or s.name > $2) order by s.name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toDataSpace, (r) => r.name);
  }

  async deleteDataSpace(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from data_spaces where tenant_id = $1 and name = $2 returning name', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }

  async putDocuments(tenantId: string, space: string, documents: Array<{ key: string; value: unknown }>) {
    const [row] = await this.db.query(
      `with s as (select name from data_spaces where tenant_id = $1 and name = $2),
       written as (
         insert into data_documents (tenant_id, space, key, value)
         select $1, s.name, d.key, d.value from jsonb_to_recordset($3::jsonb) as d(key text, value jsonb) cross join s
         on conflict (tenant_id, space, key) do update set value = excluded.value, updated_at = now()
         returning (xmax = 0) as created)
       select exists (select 1 from s) as found, count(*) filter (where created) as created, count(*) filter (where not created) as updated from written`,
      [tenantId, space, JSON.stringify(documents.map(({ key, value }) => ({ key, value: value ?? null })))],
    );
    return row.found ? { created: Number(row.created), updated: Number(row.updated) } : undefined;
  }

  async getDocument(tenantId: string, space: string, key: string) {
    const [row] = await this.db.query('select * from data_documents where tenant_id = $1 and space = $2 and key = $3', [
      tenantId,
      space,
      key,
    ]);
    return row ? toDataDocument(row) : undefined;
  }

  async listDocuments(tenantId: string, space: string, filter: { prefix?: string }, request: PageRequest) {
    const rows = await this.db.query(
      `select * from data_documents where tenant_id = $1 and space = $2 and ($3::text is null or starts_with(key, $3))
         and ($4::text is null or key > $4) order by key limit $5`,
      [tenantId, space, filter.prefix ?? null, decodeCursor(request.after, /^[\s\S]{1,512}$/), request.first + 1],
    );
    return page(rows, request, toDataDocument, (r) => r.key);
  }

  async deleteDocument(tenantId: string, space: string, key: string) {
    return (
      (
        await this.db.query(
          'delete from data_documents where tenant_id = $1 and space = $2 and key = $3 returning key',
          [tenantId, space, key],
        )
      ).length > 0
    );
  }

  async listRunLogs(tenantId: string, filter: RunLogFilter, request: PageRequest) {
    if (
      (filter.flowId !== undefined && !isUuid(filter.flowId)) ||
      (filter.runId !== undefined && !isUuid(filter.runId))
    ) {
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    }
    const rows = await this.db.query(
      `select * from run_logs where tenant_id = $1 and ($2::uuid is null or flow_id = $2::uuid) and ($3::uuid is null or run_id = $3::uuid)
          and severity >= ${SEVERITY("coalesce($4, 'info')")} and ($5::timestamptz is null or logged_at >= $5::timestamptz) and ($6::timestamptz is null or logged_at < $6::timestamptz)
          and ($7::text is null or strpos(lower(message), lower($7)) > 0) and ($8::bigint is null or seq < $8::bigint)
        order by seq desc limit $9`,
      [
        tenantId,
        filter.flowId ?? null,
        filter.runId ?? null,
        filter.level ?? null,
        filter.from ?? null,
        filter.to ?? null,
        filter.text ?? null,
        decodeCursor(request.after, /^\d{1,19}$/),
        request.first + 1,
      ],
    );
    return page(rows, request, toRunLog, (r) => String(r.seq));
  }

  async pruneRunLogs(before: string) {
    const [row] = await this.db.query(
      'with gone as (delete from run_logs where logged_at < $1 returning 1) select count(*) as n from gone',
      [before],
    );
    return Number(row.n);
  }

  async listUnfinishedRuns(
    createdBefore: string,
    after: UnfinishedRunCursor | undefined,
    limit: number,
  ): Promise<UnfinishedRun[]> {
    const rows = await this.db.query(
      `select tenant_id, id, status, created_at from runs
        where status in ${UNFINISHED} and created_at < $1 and ($2::timestamptz is null or (created_at, id) > ($2::timestamptz, $3::uuid))
        order by created_at, id limit $4`,
      [createdBefore, after?.createdAt ?? null, after?.id ?? null, limit],
    );
    return rows.map((row) => ({
      tenantId: row.tenant_id,
      id: row.id,
      status: row.status,
      createdAt: iso(row.created_at),
    }));
  }

  async putAction(
    tenantId: string,
    action: Pick<TenantAction, 'name' | 'description' | 'expression' | 'inputSchema' | 'outputSchema'>,
  ) {
    // The primary key settles a race between two saves: the loser gets a unique violation and tries the next number.
    for (;;) {
      try {
        const [row] = await this.db.query(
          `insert into actions (tenant_id, name, version, description, expression, input_schema, output_schema)
           select $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5::jsonb, $6::jsonb from actions where tenant_id = $1 and name = $2
           returning *`,
          [
            tenantId,
            action.name,
            action.description,
            action.expression,
            json(action.inputSchema),
            json(action.outputSchema),
          ],
        );
        return toTenantAction(row);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
  }

  async getAction(tenantId: string, name: string, version?: number) {
    const [row] = await this.db.query(
      'select * from actions where tenant_id = $1 and name = $2 and ($3::integer is null or version = $3) order by version desc limit 1',
      [tenantId, name, version ?? null],
    );
    return row ? toTenantAction(row) : undefined;
  }

  async listActions(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select distinct on (name) * from actions where tenant_id = $1 and ($2::text is null or name > $2) order by name, version desc limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toTenantAction, (r) => r.name);
  }

  async listActionVersions(tenantId: string, name: string, request: PageRequest) {
    const after = decodeCursor(request.after, /^\d{1,9}$/);
    const rows = await this.db.query(
      'select * from actions where tenant_id = $1 and name = $2 and ($3::integer is null or version < $3::integer) order by version desc limit $4',
      [tenantId, name, after === null ? null : Number(after), request.first + 1],
    );
    return page(rows, request, toTenantAction, (r) => String(r.version));
  }

  async deleteAction(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from actions where tenant_id = $1 and name = $2 returning version', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }

  async getUserSettings(tenantId: string, subject: string) {
    const [row] = await this.db.query('select * from user_settings where tenant_id = $1 and subject = $2', [
      tenantId,
      subject,
    ]);
    return row ? toUserSettings(row) : undefined;
  }

  async putUserSettings(tenantId: string, subject: string, settings: UserSettings['settings']) {
    const [row] = await this.db.query(
      `insert into user_settings (tenant_id, subject, settings) values ($1, $2, $3::jsonb)
       on conflict (tenant_id, subject) do update set settings = excluded.settings, updated_at = now() returning *`,
      [tenantId, subject, json(settings)],
    );
    return toUserSettings(row);
  }

  async blockTopic(tenantId: string, topic: string, reason: string | null) {
    const [row] = await this.db.query(
      `insert into blocked_topics (tenant_id, topic, reason) values ($1, $2, $3)
       on conflict (tenant_id, topic) do update set reason = excluded.reason returning *, (xmax = 0) as created`,
      [tenantId, topic, reason],
    );
    return { blockedTopic: toBlockedTopic(row), created: row.created };
  }

  async listBlockedTopics(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select b.*, (select count(*) from messages m join runs r on r.tenant_id = m.tenant_id and r.message_id = m.id
                     where m.tenant_id = b.tenant_id and m.topic = b.topic and r.status = 'held') as held
         from blocked_topics b where b.tenant_id = $1 and ($2::text is null or b.topic > $2) order by b.topic limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toBlockedTopic, (r) => r.topic);
  }

  async unblockTopic(tenantId: string, topic: string) {
    return (
      (
        await this.db.query('delete from blocked_topics where tenant_id = $1 and topic = $2 returning topic', [
          tenantId,
          topic,
        ])
      ).length > 0
    );
  }

  async releaseHeld(tenantId: string, filter: HeldFilter) {
    // Each held run is judged again: still suspended, or still blocked, it stays held with that reason.
    const rows = await this.db.query(
      `update runs r set status = case when hold.reason is null then 'queued' else 'held' end, held_by = hold.reason
         from messages m cross join lateral (select case
             when exists (select 1 from tenants t where t.id = m.tenant_id and t.status = 'suspended') then 'suspended'
             when exists (select 1 from blocked_topics b where b.tenant_id = m.tenant_id and b.topic = m.topic) then 'topic' end as reason) hold
        where r.tenant_id = $1 and r.status = 'held' and ($2::text is null or r.held_by = $2) and m.tenant_id = r.tenant_id and m.id = r.message_id
          and ($3::text is null or m.topic = $3)
       returning r.*`,
      [tenantId, filter.heldBy ?? null, filter.topic ?? null],
    );
    // Run ids are time-ordered: their order is the order the messages arrived in.
    return rows
      .filter((row) => row.status === 'queued')
      .map(toRun)
      .sort((x, y) => (x.id < y.id ? -1 : 1));
  }

  async discardHeld(tenantId: string, filter: HeldFilter, reason: string) {
    const rows = await this.db.query(
      `update runs r set status = 'cancelled', held_by = null, finished_at = now(), error = $4::jsonb from messages m
        where r.tenant_id = $1 and r.status = 'held' and ($2::text is null or r.held_by = $2) and m.tenant_id = r.tenant_id and m.id = r.message_id
          and ($3::text is null or m.topic = $3)
       returning r.id`,
      [tenantId, filter.heldBy ?? null, filter.topic ?? null, json({ kind: 'permanent', message: reason })],
    );
    return rows.length;
  }
}
