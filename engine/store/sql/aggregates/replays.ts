import { ConflictError, MAX_RUNNING_REPLAYS, REPLAY_COUNT_LIMIT, type Replay } from '../../../model/index.ts';
import type { NewReplay, ReplayStore, StoredReplayFilter } from '../../port/replays.ts';
import type { PageRequest } from '../../port/common.ts';
import type { SqlDriver } from '../driver.ts';
import { GENERIC, type Row, UUID, decodeCursor, iso, isoOrNull, isUuid, page, replayLatestRuns } from './rows.ts';
import { toRun } from './row-mappers.ts';
import { retryTasks } from './batches.ts';

/** The smallest time-ordered id of a time (SQL), as idAt (a time before 1970 as 1970): ids bound an index range. */
const idAt = (time: string) => {
  const ms = `(extract(epoch from ${time}) * 1000)::bigint`;
  // Null stays null (no bound): greatest() would make it 0.
  return `(lpad(to_hex(case when ${ms} < 0 then 0 else ${ms} end), 12, '0') || '70008000000000000000')::uuid`;
};

/**
 * A value of the filter compared with each run, worked out once: a sub-select of values alone is an InitPlan, run
 * before the scan. Inlined, each run re-parsed the filter's times into ids (5 µs a run: most of a dry run's time at
 * 1,000 matches); in an index condition a value is worked out once anyway.
 */
const once = (value: string) => `(select ${value})`;

/**
 * The condition on a run's error kind: for a filter known to name one (`ofKind`), an equality that finds its runs
 * by runs_by_error_kind (migration 25); else one that holds for any kind when the filter names none.
 */
const errorKindCondition = (filter: string, ofKind: boolean) => {
  const kind = `r.error->>'kind' = ${once(`${filter}->>'errorKind'`)}`;
  return ofKind ? `r.error is not null and ${kind}` : `(${filter}->>'errorKind' is null or ${kind})`;
};

/**
 * The messages a filter (a jsonb expression) without a batch matches for a tenant: not batch items (a filter with a
 * batch takes those), whose latest run ended with the filter's status, and its other conditions (a flow's call is
 * a message of its own, left to its caller unless `includeCalls`); with `madeAt`,
 * only runs made before it (a replay's page never takes the runs it made). Found from the runs of that status
 * (runs_by_status), in the order of their ids, within the ids that the time bounds give: the work is the matching
 * runs', not the tenant's history. Messages are not read: a run's message is never a repeated delivery, its flow
 * is the run's, and its id tells when it arrived (UUIDv7, made as it was received). `ofKind`: the filter names an
 * error kind.
 */
const matches = (tenant: string, filter: string, madeAt = 'null', ofKind = false) => `
  select r.message_id, r.flow_id, r.id as run_id, r.parent_run_id, r.call_depth from runs r
   where ${filter}->>'batchId' is null and r.tenant_id = ${tenant} and r.status = ${filter}->>'status'
     and r.batch_id is null
     and not r.superseded
     and (r.call_depth = 0 or coalesce((${filter}->>'includeCalls')::boolean, false))
     and r.id >= coalesce(${idAt(`((${filter}->>'receivedFrom')::timestamptz - interval '1 minute')`)},
                          '00000000-0000-0000-0000-000000000000')
     and r.id < coalesce(${idAt(`${madeAt}::timestamptz`)}, 'ffffffff-ffff-ffff-ffff-ffffffffffff')
     and (${filter}->>'flowId' is null or r.flow_id = ${once(`(${filter}->>'flowId')::uuid`)})
     and ${errorKindCondition(filter, ofKind)}
     and (${filter}->>'receivedFrom' is null
          or r.message_id >= ${once(idAt(`(${filter}->>'receivedFrom')::timestamptz`))})
     and (${filter}->>'receivedTo' is null
          or r.message_id < ${once(idAt(`(${filter}->>'receivedTo')::timestamptz`))})`;

/** The tasks of a filter's batch whose run failed (of its error kind), in the batch's order. */
const failedTasks = (tenant: string, filter: string) => `
  select t.key, t.run_id as old_run, t.seq from batch_tasks t
    join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
   where t.tenant_id = ${tenant} and t.batch_id = (${filter}->>'batchId')::uuid and r.status = 'failed'
     and (${filter}->>'errorKind' is null or r.error->>'kind' = ${filter}->>'errorKind')`;

/** How many messages, or failed tasks of its batch, a filter matches: up to one past REPLAY_COUNT_LIMIT. */
const countMatches = (tenant: string, filter: string, ofKind: boolean) =>
  `(select count(*) from (${matches(tenant, filter, 'null', ofKind)} limit ${REPLAY_COUNT_LIMIT + 1}) found)
   + (select count(*) from (${failedTasks(tenant, filter)} limit ${REPLAY_COUNT_LIMIT + 1}) tasks)`;

const toReplay = (r: Row): Replay => ({
  id: r.id,
  filter: r.filter,
  ratePerSecond: r.rate_per_second,
  redoCompletedSteps: r.redo_completed_steps,
  priority: r.priority,
  status: r.status,
  total: Math.min(r.total, REPLAY_COUNT_LIMIT),
  totalExact: r.total <= REPLAY_COUNT_LIMIT,
  replayed: r.replayed,
  skipped: r.skipped,
  createdAt: iso(r.created_at),
  finishedAt: isoOrNull(r.finished_at),
});

/** Bulk replays, and the runs they start. */
export class SqlReplays implements ReplayStore {
  constructor(private readonly db: SqlDriver) {}

  async countReplayable(tenantId: string, filter: StoredReplayFilter) {
    // Its filter is a value: planned once, it prunes the weeks its bounds leave out as it runs.
    const [row] = await this.db.query(
      `select ${countMatches('$1', '$2::jsonb', filter.errorKind !== undefined)} as n`,
      [tenantId, JSON.stringify(filter)],
      GENERIC,
    );
    return Number(row.n);
  }

  async createReplay(tenantId: string, replay: NewReplay) {
    const [row] = await this.db.query(
      `insert into replays (tenant_id, id, request_key, filter, rate_per_second, total, redo_completed_steps, priority)
       select $1, $2, $3, $4::jsonb, $5, ${countMatches('$1', '$4::jsonb', replay.filter.errorKind !== undefined)}, $7,
              $8
        where (select count(*) from replays where tenant_id = $1 and status = 'running') < $6
       on conflict (tenant_id, request_key) where request_key is not null do nothing
       returning *`,
      [
        tenantId,
        replay.id,
        replay.requestKey,
        JSON.stringify(replay.filter),
        replay.ratePerSecond,
        MAX_RUNNING_REPLAYS,
        replay.redoCompletedSteps,
        replay.priority,
      ],
      GENERIC,
    );
    if (row) return { replay: toReplay(row), created: true };
    const [earlier] = await this.db.query('select * from replays where tenant_id = $1 and request_key = $2', [
      tenantId,
      replay.requestKey,
    ]);
    if (earlier) return { replay: toReplay(earlier), created: false };
    throw new ConflictError(
      `${MAX_RUNNING_REPLAYS} replays of the tenant are running: wait for one to finish, or cancel one`,
    );
  }

  async getReplay(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select * from replays where tenant_id = $1 and id = $2', [tenantId, id]);
    return row ? toReplay(row) : undefined;
  }

  async listReplays(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select * from replays where tenant_id = $1 and ($2::uuid is null or id < $2::uuid) order by id desc limit $3`,
      [tenantId, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toReplay, (r) => r.id);
  }

  async cancelReplay(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query(
      `update replays set status = case when status = 'running' then 'cancelled' else status end,
         finished_at = coalesce(finished_at, now())
       where tenant_id = $1 and id = $2 returning *`,
      [tenantId, id],
    );
    return row ? toReplay(row) : undefined;
  }

  async replayNextPage(runIds: string[]) {
    // One statement: the replay's row stays locked from choosing the page to moving its cursor, so two
    // workers never take the same page, and a crash leaves either the whole page done or none of it. The runs it
    // replays are locked too: a run another replay (or a retry) is taking is skipped, and one it took meanwhile is
    // superseded, so no message is replayed twice.
    const [row] = await this.db.query(
      `with job as (
         select * from replays where status = 'running' and next_at <= now() order by next_at limit 1
           for update skip locked),
       found as (
         select found.*, row_number() over (order by found.run_id) as n from job cross join lateral (
           ${matches('job.tenant_id', 'job.filter', 'job.created_at')}
             and r.id > coalesce(job.cursor, '00000000-0000-0000-0000-000000000000'::uuid)
           order by r.id limit job.rate_per_second for update of r skip locked) found),
       picked as (
         select job.tenant_id, f.run_id as old_run, f.message_id, f.flow_id, f.parent_run_id, f.call_depth,
                ($1::uuid[])[f.n] as run_id
           from job cross join found f),
       ${replayLatestRuns('picked', '(select redo_completed_steps from job)', '(select id from job)')},
       picked_tasks as (
         select found.*, ($1::uuid[])[found.n] as run_id
           from job cross join lateral (
             select tasks.*, row_number() over (order by tasks.seq) as n from (
               ${failedTasks('job.tenant_id', 'job.filter')} and t.seq > coalesce(job.cursor_seq, 0)
               order by t.seq limit job.rate_per_second) tasks) found),
       ${retryTasks(
         '(select tenant_id from job)',
         "(select (filter->>'batchId')::uuid from job)",
         'picked_tasks',
         '(select id from job)',
         '(select redo_completed_steps from job)',
       )},
       page as (
         select (select count(*) from found) + (select count(*) from picked_tasks) as taken,
                (select count(*) from inserted) + (select count(*) from retried) as made),
       progressed as (
         update replays set
           -- The cursor is the last run looked at (run ids are the matches' order).
           cursor = coalesce((select run_id from found order by run_id desc limit 1), replays.cursor),
           cursor_seq = coalesce((select max(seq) from picked_tasks), replays.cursor_seq),
           replayed = replays.replayed + page.made,
           -- Finished, every message counted is replayed or skipped (taken by another replay or retry meanwhile,
           -- its flow inactive): the counts add up to the total, which grows by what failed since it was counted.
           skipped = case when page.taken < job.rate_per_second and replays.total <= ${REPLAY_COUNT_LIMIT}
             then greatest(replays.total, replays.replayed + replays.skipped + page.taken) - replays.replayed
               - page.made
             else replays.skipped + page.taken - page.made end,
           total = case when page.taken < job.rate_per_second and replays.total <= ${REPLAY_COUNT_LIMIT}
             then greatest(replays.total, replays.replayed + replays.skipped + page.taken) else replays.total end,
           status = case when page.taken < job.rate_per_second then 'finished' else 'running' end,
           finished_at = case when page.taken < job.rate_per_second then now() end,
           next_at = now() + interval '1 second'
         from job, page where replays.tenant_id = job.tenant_id and replays.id = job.id
         returning replays.*)
       select (select to_jsonb(p) from progressed p) as replay,
              coalesce((select jsonb_agg(to_jsonb(i) order by i.id) from (select * from inserted union all
                select * from retried) i), '[]'::jsonb) as runs`,
      [runIds],
    );
    if (!row?.replay) return undefined;
    return { replay: toReplay(row.replay), runs: (row.runs as Row[]).map(toRun) };
  }
}
