import type { QueryOptions } from '../driver.ts';
import { ID_HOUR } from '../migrations/19-rollups.ts';
// Paging, cursors and SQL fragments the aggregates share; the row mappers are in row-mappers.ts.
import {
  ENVIRONMENT_SEPARATOR,
  terminalRunStatuses,
  unfinishedRunStatuses,
  ValidationError,
} from '../../../model/index.ts';
import type {
  MessageStatus,
  RunStatus,
  Page,
  PageRequest,
  RunOutcome,
  RunReads,
  Step,
  RunLogAppend,
} from '../../port.ts';

export interface ProgressSave {
  tenantId: string;
  runId: string;
  steps: Step[];
  outcome?: RunOutcome;
  logs?: RunLogAppend;
}

// biome-ignore lint/suspicious/noExplicitAny: a row's columns are typed by the mapper that reads them
export type Row = Record<string, any>;

export const iso = (value: unknown): string =>
  value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
export const isoOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : iso(value));
export const json = (value: unknown): string => JSON.stringify(value ?? null);
/** Statuses as an SQL list, `('a','b')`: the SQL follows the status sets of resources.ts. */
const sqlList = (values: readonly string[]) => `(${values.map((value) => `'${value}'`).join(',')})`;
export const TERMINAL = sqlList(terminalRunStatuses);
export const UNFINISHED = sqlList(unfinishedRunStatuses);
/** Not finished: unfinished, or held. */
export const OPEN = sqlList(['held', ...unfinishedRunStatuses]);
/**
 * CTEs to follow `inserted`, new runs of messages that had runs (a replay, a retry): each message's latest earlier
 * run is superseded, and its outcome no longer counts (message_outcomes, decision 23). The look-up reads the
 * message's runs by runs_by_message, nothing about ids in it ("offset 0" keeps it apart): with one, a partition not
 * yet analyzed made the primary key look as cheap, and it walked the tenant's runs.
 */
export const supersedeEarlierRuns = (inserted: string, name = 'superseded') => `${name} as (
    update runs r set superseded = true
      from (select e.tenant_id, e.id from ${inserted} n cross join lateral (
              select x.tenant_id, x.id from runs x where x.tenant_id = n.tenant_id and x.message_id = n.message_id
                 and not x.superseded offset 0) e
             where e.id < n.id) earlier
     where r.tenant_id = earlier.tenant_id and r.id = earlier.id
    returning r.tenant_id, r.message_id, r.status
  ), ${name}_uncounted as (
    insert into message_outcomes as c (tenant_id, hour, status, messages)
    select tenant_id, ${ID_HOUR('message_id')}, status, -count(*) from ${name} where status in ${TERMINAL}
     group by 1, 2, 3 order by 1, 2, 3
    on conflict (tenant_id, hour, status) do update set messages = c.messages + excluded.messages
  )`;
/**
 * CTEs that run messages again (a replay, a retry), ending with `inserted`, the new runs: for each row of `picked`
 * (tenant_id, old_run: the message's latest run, read FOR UPDATE by the caller, and its message_id, flow_id,
 * parent_run_id, call_depth; run_id: the new run's id), a queued run on the flow's active version naming the run it
 * replays (and the bulk replay `replayId`, an SQL expression, if any). The earlier runs are superseded, and the
 * steps the replayed run completed (but those holding a failed one: FAILED_INSIDE) are carried over to the new run
 * when it runs the same version, unless `redo` (an SQL boolean): its side effects are not made again.
 */
export const replayLatestRuns = (picked: string, redo: string, replayId = 'null::uuid') => `inserted as (
    insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, replay_of, replay_id, parent_run_id,
      call_depth, keep_days, concurrency)
    select p.tenant_id, p.run_id, f.id, f.active_version, p.message_id, 'queued', p.old_run, ${replayId},
           p.parent_run_id, p.call_depth, keep_days(p.tenant_id),
           (select o.concurrency from (${LOOKUP('runs', 'p.tenant_id', 'p.old_run')}) o)
      from ${picked} p join flows f on f.tenant_id = p.tenant_id and f.id = p.flow_id and f.active
       and f.active_version is not null
    returning *
  ), ${supersedeEarlierRuns('inserted')},
  carried as (
    insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at,
      keep_days)
    select n.tenant_id, n.id, s.key, s.node_id, s.status, s.attempts, s.output, s.error, s.started_at, s.finished_at,
           n.keep_days
      from inserted n join runs o on o.tenant_id = n.tenant_id and o.id = n.replay_of
       and o.flow_version = n.flow_version
      join steps s on s.tenant_id = n.tenant_id and s.run_id = o.id and s.status = 'succeeded'
     where not ${redo} and not ${FAILED_INSIDE('s')})`;
/**
 * Whether step `s` holds a step that failed (a loop whose item failed: it succeeded, listing the item): not carried
 * over, so that a replay runs the failed items again.
 */
export const FAILED_INSIDE = (s: string) => `exists (select 1 from steps x where x.tenant_id = ${s}.tenant_id
  and x.run_id = ${s}.run_id and x.status = 'failed' and starts_with(x.key, ${s}.key || '['))`;
/** Repeated deliveries are recognised for this many days (table deliveries, migration 20). */
export const DELIVERY_RECOGNITION_DAYS = 7;
export const UTC_TODAY = "(now() at time zone 'UTC')::date";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids are UUIDs: anything else names no record (and must not reach a uuid column as an error). */
export const isUuid = (id: string) => UUID.test(id);

/** Cursors are opaque to clients: base64url of the last sort key, checked on the way back in. */
export const encodeCursor = (key: string) => Buffer.from(key).toString('base64url');
export function decodeCursor(cursor: string | undefined, shape: RegExp = /^[\s\S]{1,200}$/): string | null {
  if (cursor === undefined) return null;
  const key = Buffer.from(cursor, 'base64url').toString();
  if (!shape.test(key))
    throw new ValidationError('Invalid cursor', [{ path: '$.after', message: 'is not a cursor of this list' }]);
  return key;
}

/** A read planned once for any values (QueryOptions.plan). */
export const GENERIC: QueryOptions = { plan: 'generic' };

/** An optional condition of a filter: its SQL given the parameter that holds its value, and the value (unset: none). */
export type Condition = [sql: (param: string) => string, value: unknown];

/**
 * ` and ` each set condition, its value appended to `params`: a statement holds only the conditions a request
 * has (no `$n is null or ...`), so that its plan, generic or not, bounds an index by each.
 */
export function andSet(params: unknown[], conditions: Condition[]): string {
  let sql = '';
  for (const [condition, value] of conditions)
    if (value !== undefined && value !== null) sql += ` and ${condition(`$${params.push(value)}`)}`;
  return sql;
}

export function page<T>(
  rows: Row[],
  request: PageRequest,
  map: (row: Row) => T,
  cursorOf: (row: Row) => string,
): Page<T> {
  const hasNextPage = rows.length > request.first;
  const visible = hasNextPage ? rows.slice(0, request.first) : rows;
  const last = visible[visible.length - 1];
  return { nodes: visible.map(map), pageInfo: { hasNextPage, endCursor: last ? encodeCursor(cursorOf(last)) : null } };
}

export const DATA_SPACES = `select s.*, (select count(*) from data_documents d where d.tenant_id = s.tenant_id
  and d.space = s.name) as documents from data_spaces s`;
/** pino's numbers for the levels kept, so "warn and above" is a comparison. */
export const SEVERITY = (level: string) =>
  `(case ${level} when 'info' then 30 when 'warn' then 40 when 'error' then 50 when 'fatal' then 60 end)`;
/** The statuses of a message's latest run that give it each status (MESSAGE_STATUS), but a repeated delivery's. */
const RUN_STATUSES_OF: Record<Exclude<MessageStatus, 'duplicate'>, readonly RunStatus[]> = {
  accepted: ['queued'],
  blocked: ['held'],
  running: ['running', 'waiting'],
  succeeded: ['succeeded'],
  failed: ['failed'],
  handled: ['handled'],
  filtered: ['filtered'],
  skipped: ['skipped'],
  cancelled: ['cancelled'],
  debounced: ['debounced'],
};
/** A message's status, from its latest run `r` (joined with LATEST_RUN). */
export const MESSAGE_STATUS = `case when m.duplicate_of is not null then 'duplicate' when r.status = 'held'
  then 'blocked' when r.status = 'queued' then 'accepted'
    when r.status in ('running', 'waiting') then 'running' else r.status end`;
const LATEST_RUN = `left join lateral (
    select id, status, batch_id from runs where tenant_id = m.tenant_id and message_id = m.id
      order by id desc limit 1) r on true`;
/** A message's columns as listed, its id `id`: bodies over $2 bytes left out. `m` is the message, `r` its latest run. */
const messageColumns = (id: string) => `${id} as id, m.flow_id, m.flow_version, m.delivery_id, m.topic, m.duplicate_of,
  m.headers, m.query, m.received_at, octet_length(m.body::text) as body_bytes, octet_length(m.body::text) > $2 as
  body_truncated, case when octet_length(m.body::text) <= $2 then m.body::text end as body, r.id as run_id,
  ${MESSAGE_STATUS} as status`;
/** Messages with their status: a view over messages, filtered by tenant ($1). */
export const MESSAGE_INFO = `select * from (select ${messageColumns('m.id')} from messages m ${LATEST_RUN}
  where m.tenant_id = $1) info`;
/**
 * The same view of the tenant's ($1) messages of a status other than duplicate, from their latest runs
 * (runs_latest_by_status, migration 21): in the order of their ids without reading any other message.
 */
export const messagesOfStatus = (status: Exclude<MessageStatus, 'duplicate'>) => `select * from (
  select ${messageColumns('r.message_id')}
    from runs r cross join lateral (${LOOKUP('messages', 'r.tenant_id', 'r.message_id')}) m
   where r.tenant_id = $1 and r.status in ${sqlList(RUN_STATUSES_OF[status])} and not r.superseded) info`;
/** A batch with the counts of its tasks' latest runs. */
/**
 * A batch with its task counts. A batch running again after its tasks were retried (the run that made it
 * has ended, so nothing else will settle it) is settled here, as the tasks ended: `settled_status`.
 */
export const BATCH_WITH_COUNTS = `select b.*, c.*,
    case when b.status = 'running' and c.unfinished = 0
      and (select o.status from runs o where o.tenant_id = b.tenant_id and o.id = b.run_id) in ${TERMINAL}
      then case when c.failed > 0 then 'failed' else 'succeeded' end end as settled_status
  from batches b cross join lateral (
    select count(*) as total,
      count(*) filter (where r.status in ${UNFINISHED}) as unfinished,
      count(*) filter (where r.status = 'succeeded') as succeeded,
      count(*) filter (where r.status in ('failed', 'handled')) as failed,
      count(*) filter (where r.status in ('skipped', 'filtered', 'cancelled', 'debounced')) as skipped,
      max(r.finished_at) as last_finished_at
    from batch_tasks t join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
    where t.tenant_id = b.tenant_id and t.batch_id = b.id) c`;

/**
 * What a run reads, as one row of the recordset `w` (columns READS_COLUMNS): the variables, secrets
 * and platform values it names, or all of them.
 */
export function readsRow(tenantId: string, reads: RunReads) {
  const platform = reads.platform === '*' ? { all: true, names: [] } : { all: false, names: [...reads.platform] };
  return {
    tenant_id: tenantId,
    vars: [...reads.vars],
    secrets: [...reads.secrets],
    reads_platform: platform.all || platform.names.length > 0,
    all_platform: platform.all,
    platform: platform.names,
  };
}
/**
 * The runs a group names ($1 tenants, $2 run ids, in pairs), as rows `k`: see beginRuns for why unnest of sub-
 * selects.
 */
/**
 * A row of a table partitioned by id (migration 20), looked up by its key for each row of a join. `limit 1` keeps
 * it a lookup: the planner, which does not count the partitions that run-time pruning skips, would otherwise
 * often hash a scan of every partition instead.
 */
export const LOOKUP = (table: 'runs' | 'messages', tenantId: string, id: string) =>
  `select * from ${table} where tenant_id = ${tenantId} and id = ${id} limit 1`;

export const RUN_KEYS = 'unnest((select $1::text[]), (select $2::uuid[])) as k(tenant_id, run_id)';
export const READS_COLUMNS =
  'tenant_id text, vars text[], secrets text[], reads_platform boolean, all_platform boolean, platform text[]';

/**
 * The columns `vars`, `sealed_secrets` and `platform` of what the run of row `w` reads.
 * `$platform` is the tenant's override of each name (in every environment of the tenant), else the platform's value; most flows read
 * none, and then the statement does not look.
 */
export const RUN_CONTEXT = `(select coalesce(jsonb_object_agg(v.name, v.value), '{}'::jsonb) from variables v
        where v.tenant_id = w.tenant_id and v.name = any(w.vars)) as vars,
      (select coalesce(jsonb_agg(jsonb_build_object('name', x.name, 'keyId', x.key_id, 'ciphertext', x.ciphertext,
        'fingerprint', x.fingerprint)), '[]'::jsonb)
         from secrets x where x.tenant_id = w.tenant_id and x.name = any(w.secrets)) as sealed_secrets,
      case when w.reads_platform then (select coalesce(jsonb_object_agg(name, value), '{}'::jsonb) from (
         select coalesce(t.name, p.name) as name, coalesce(t.value, p.value) as value
           from (select name, value from platform_globals where w.all_platform or name = any(w.platform)) p
           full join (select name, value from platform_tenant_globals
             where tenant_id = split_part(w.tenant_id, '${ENVIRONMENT_SEPARATOR}', 1) and (w.all_platform
             or name = any(w.platform))) t
             on t.name = p.name) resolved) else '{}'::jsonb end as platform`;

export const isUniqueViolation = (error: unknown) => (error as { code?: string })?.code === '23505';
