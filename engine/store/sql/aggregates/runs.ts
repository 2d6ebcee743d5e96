import type {
  PageRequest,
  RunOutcome,
  RunReads,
  RunState,
  RunFilter,
  Step,
  RunLogAppend,
  UnfinishedRun,
  UnfinishedRunCursor,
  RunStore,
} from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { GroupCommit } from '../../group-commit.ts';
import { JsonText, LARGE_JSON_LENGTH, parseJson } from '../../../model/index.ts';
import {
  type ProgressSave,
  type Row,
  json,
  TERMINAL,
  UNFINISHED,
  UUID,
  isUuid,
  decodeCursor,
  page,
  andSet,
  GENERIC,
  SEVERITY,
  readsRow,
  LOOKUP,
  RUN_KEYS,
  READS_COLUMNS,
  RUN_CONTEXT,
} from './rows.ts';
import { toMessage, toRun, toStep } from './row-mappers.ts';

/** Runs as workers begin, checkpoint and finish them. */
export class SqlRuns implements RunStore {
  constructor(private readonly db: SqlDriver) {}

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
         select r.* from ${RUN_KEYS} cross join lateral (${LOOKUP('runs', 'k.tenant_id', 'k.run_id')}) r
          where not exists (select 1 from started s where s.tenant_id = r.tenant_id and s.id = r.id)
       )
       select w.i, to_jsonb(run.*) as run,
              jsonb_build_object('tenant_id', m.tenant_id, 'id', m.id, 'flow_id', m.flow_id, 'flow_version',
                m.flow_version, 'delivery_id', m.delivery_id, 'topic', m.topic, 'headers', m.headers, 'query', m.query,
                'received_at', m.received_at) as message,
              m.body::text as body, m.traceparent,
              coalesce((select jsonb_agg(to_jsonb(s.*) order by s.seq) from steps s where s.tenant_id = run.tenant_id
                and s.run_id = run.id), '[]'::jsonb) as steps,
              ${RUN_CONTEXT}
         from run join jsonb_to_recordset($3::jsonb) as w(i integer, run_id uuid, ${READS_COLUMNS})
           on w.tenant_id = run.tenant_id and w.run_id = run.id
         cross join lateral (${LOOKUP('messages', 'run.tenant_id', 'run.message_id')}) m`,
      [
        items.map((item) => item.tenantId),
        items.map((item) => item.runId),
        JSON.stringify(items.map((item, i) => ({ i, run_id: item.runId, ...readsRow(item.tenantId, item.reads) }))),
      ],
    );
    const states: Array<RunState | undefined> = new Array(items.length).fill(undefined);
    for (const row of rows) {
      // A run always has its message (the message's deletion takes its runs along). Its body comes as text:
      // a large one stays text until the run reads it (parseOnRead), a small one is parsed at once.
      const body: string = row.body;
      states[row.i] = {
        run: toRun(row.run),
        message: {
          ...toMessage(row.message),
          body: body.length > LARGE_JSON_LENGTH ? new JsonText(body) : parseJson(body),
        },
        steps: (row.steps as Row[]).map(toStep),
        traceparent: row.traceparent ?? undefined,
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

  /**
   * Writes each run's checkpoints and log lines, and its status when it has an outcome; true for each run whose
   * status changed.
   */
  private async saveProgresses(items: ProgressSave[]): Promise<boolean[]> {
    // A run's steps are numbered (seq) in the order given: `n` keeps it through the join to their runs.
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
        exchanges: step.exchanges ?? null,
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
         select l.tenant_id, l.flow_id, l.run_id, l.node_id, ${SEVERITY('l.level')}, l.level, l.message, l.data,
           l.logged_at
           from jsonb_to_recordset($3::jsonb) as l(tenant_id text, run_id uuid, flow_id uuid, n integer, log_limit
             integer, node_id text, level text,
                message text, data jsonb, logged_at timestamptz)
          where l.n + (select count(*) from run_logs x where x.tenant_id = l.tenant_id
            and x.run_id = l.run_id) <= l.log_limit
       ), saved as (
         -- A step is kept as long as its run (migration 20; the retention sweep never moves a running run).
         insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at,
           exchanges, keep_days)
         select x.tenant_id, x.run_id, x.key, x.node_id, x.status, x.attempts, x.output, x.error, x.started_at,
           x.finished_at, x.exchanges, r.keep_days
           from jsonb_to_recordset($2::jsonb) as x(n integer, tenant_id text, run_id uuid, key text, node_id text,
             status text, attempts integer, output jsonb, error jsonb, started_at timestamptz, finished_at timestamptz,
             exchanges jsonb)
           cross join lateral (${LOOKUP('runs', 'x.tenant_id', 'x.run_id')}) r
          order by x.n
         on conflict (tenant_id, run_id, key, keep_days) do update set status = excluded.status, attempts = excluded.attempts,
           output = excluded.output, error = excluded.error, started_at = excluded.started_at,
           finished_at = excluded.finished_at, exchanges = excluded.exchanges
         returning 1
       )
       -- unnest() of sub-selects, as in beginRuns: each run looked up by its key, one plan for any batch.
       update runs r set status = o.status, error = o.error, finished_at = case when o.status = 'waiting' then null
         else now() end, budget_wait_ms = coalesce(o.budget_wait_ms, r.budget_wait_ms)
         from unnest((select $1::text[]), (select $4::uuid[]), (select $5::text[]), (select $6::jsonb[]),
           (select $7::bigint[])) with ordinality as o(tenant_id, run_id, status, error, budget_wait_ms, i)
        where r.tenant_id = o.tenant_id and r.id = o.run_id and o.status is not null and r.status not in ${TERMINAL}
       returning o.i`,
      [
        items.map((item) => item.tenantId),
        JSON.stringify(steps.map((step, n) => ({ n, ...step }))),
        JSON.stringify(lines),
        items.map((item) => item.runId),
        items.map((item) => item.outcome?.status ?? null),
        items.map((item) => (item.outcome ? json(item.outcome.error) : null)),
        items.map((item) => item.outcome?.budgetWaitMs ?? null),
      ],
    );
    const changed = new Array<boolean>(items.length).fill(false);
    for (const row of updated) changed[Number(row.i) - 1] = true;
    return changed;
  }

  async getRun(tenantId: string, runId: string) {
    if (!isUuid(runId)) return undefined;
    // Planned once: planned for each call, the join to messages was planned over every week's partition each time.
    // The weeks are left out as the statements run (by the run's id, then its message's). The message is looked up
    // by its key: joined, a store of some thousands of runs was planned to hash every message of the tenant (5 ms).
    const [run] = await this.db.query(
      `select r.*, (select m.traceparent from messages m where m.tenant_id = r.tenant_id and m.id = r.message_id)
              as message_traceparent
         from runs r where r.tenant_id = $1 and r.id = $2`,
      [tenantId, runId],
      GENERIC,
    );
    if (!run) return undefined;
    const steps = await this.db.query(
      'select * from steps where tenant_id = $1 and run_id = $2 order by seq',
      [tenantId, runId],
      GENERIC,
    );
    return { run: toRun(run), steps: steps.map(toStep), traceparent: run.message_traceparent ?? undefined };
  }

  async debounceRuns(runs: Array<{ tenantId: string; runId: string; by: string }>): Promise<void> {
    if (runs.length === 0) return;
    // unnest() of sub-selects, as in beginRuns: each run looked up by its key, one plan for any batch.
    await this.db.query(
      `update runs r set status = 'debounced', debounced_by = d.by, finished_at = now()
         from unnest((select $1::text[]), (select $2::uuid[]), (select $3::uuid[])) as d(tenant_id, run_id, by)
        where r.tenant_id = d.tenant_id and r.id = d.run_id and r.status = 'queued'`,
      [runs.map((run) => run.tenantId), runs.map((run) => run.runId), runs.map((run) => run.by)],
    );
  }

  async hasUnfinishedRun(tenantId: string, flowId: string) {
    const rows = await this.db.query(
      `select 1 from runs where tenant_id = $1 and flow_id = $2 and status in ${UNFINISHED} limit 1`,
      [tenantId, flowId],
    );
    return rows.length > 0;
  }

  async listRuns(tenantId: string, filter: RunFilter, request: PageRequest) {
    if (
      (filter.flowId !== undefined && !isUuid(filter.flowId)) ||
      (filter.parentRunId !== undefined && !isUuid(filter.parentRunId))
    )
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const params: unknown[] = [tenantId, request.first + 1];
    const conditions = andSet(params, [
      [(p) => `flow_id = ${p}::uuid`, filter.flowId],
      [(p) => `status = ${p}`, filter.status],
      [(p) => `parent_run_id = ${p}::uuid`, filter.parentRunId],
      [(p) => `id < ${p}::uuid`, decodeCursor(request.after, UUID)],
    ]);
    const rows = await this.db.query(
      `select * from runs where tenant_id = $1 ${conditions} order by id desc limit $2`,
      params,
      GENERIC,
    );
    return page(rows, request, toRun, (r) => r.id);
  }

  async listUnfinishedRuns(
    createdBefore: string,
    after: UnfinishedRunCursor | undefined,
    limit: number,
    tenantId?: string,
  ): Promise<UnfinishedRun[]> {
    // The cursor's time to the microsecond, as stored: to the millisecond, a page could start before its cursor and
    // give its runs again (runs accepted in one statement share their time), a page of them forever.
    const rows = await this.db.query(
      `select r.tenant_id, r.id, r.flow_id, r.flow_version, r.status, to_json(r.created_at) #>> '{}' as created_at,
          r.concurrency, r.debounce, p.priority
        from runs r left join replays p on p.tenant_id = r.tenant_id and p.id = r.replay_id
        where r.status in ${UNFINISHED} and r.created_at < $1 and ($2::timestamptz is null
          or (r.created_at, r.id) > ($2::timestamptz, $3::uuid)) and ($5::text is null or r.tenant_id = $5)
        order by r.created_at, r.id limit $4`,
      [createdBefore, after?.createdAt ?? null, after?.id ?? null, limit, tenantId ?? null],
    );
    return rows.map((row) => ({
      tenantId: row.tenant_id,
      id: row.id,
      flowId: row.flow_id,
      flowVersion: row.flow_version,
      status: row.status,
      createdAt: row.created_at,
      concurrency: row.concurrency ?? null,
      debounce: row.debounce ?? null,
      priority: row.priority ?? null,
    }));
  }
}
