import type { BatchStatus, NewBatch, NewBatchTask, PageRequest, RunStatus, BatchStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { UUID, isUuid, decodeCursor, page, supersedeEarlierRuns, FAILED_INSIDE, BATCH_WITH_COUNTS } from './rows.ts';
import { toRun, toBatch, toBatchTask, toIncrementalField } from './row-mappers.ts';

/**
 * The parts of a statement (CTEs, ending with `retried`: the new runs) that try failed tasks of a batch again: for
 * each row of `picked` (key, old_run, run_id), a new run of the task's message in the task's place, naming the run it
 * retries (and the bulk replay `replayId`, an SQL expression, if any). It carries over the fan-out checkpoint and,
 * unless `redo` (an SQL boolean), every step the failed run completed: a retry sends nothing twice, and what it
 * sends goes under the same idempotency keys (they derive from the message). The failed run stays in the history,
 * superseded, and the batch runs again.
 */
export const retryTasks = (tenant: string, batch: string, picked: string, replayId: string, redo: string) => `
  task as (
    update batch_tasks t set run_id = i.run_id, retries = retries + 1 from ${picked} i
     where t.tenant_id = ${tenant} and t.batch_id = ${batch} and t.key = i.key and t.run_id = i.old_run
    returning t.key, t.retries),
  fresh as (
    select i.key, i.old_run, i.run_id, r.flow_id, r.flow_version, r.message_id, b.node_id
      from ${picked} i join task t on t.key = i.key
      join runs r on r.tenant_id = ${tenant} and r.id = i.old_run
      join batches b on b.tenant_id = ${tenant} and b.id = ${batch}),
  task_steps as (
    insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at,
      keep_days)
    select ${tenant}, f.run_id, st.key, st.node_id, st.status, st.attempts, st.output, st.error, st.started_at,
           st.finished_at, keep_days(${tenant})
      from fresh f join steps st on st.tenant_id = ${tenant} and st.run_id = f.old_run and st.status = 'succeeded'
       and (st.key = f.node_id or (not ${redo} and not ${FAILED_INSIDE('st')}))),
  reopened as (
    update batches set status = 'running', finished_at = null
     where tenant_id = ${tenant} and id = ${batch} and exists (select 1 from fresh)),
  retried as (
    insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, batch_id, replay_of, replay_id,
      keep_days)
    select ${tenant}, run_id, flow_id, flow_version, message_id, 'queued', ${batch}, old_run, ${replayId},
           keep_days(${tenant}) from fresh
    returning *),
  ${supersedeEarlierRuns('retried', 'retried_superseded')}`;

/** Fan-out batches and their tasks, and incremental fields. */
export class SqlBatches implements BatchStore {
  constructor(private readonly db: SqlDriver) {}

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
      `${BATCH_WITH_COUNTS} where b.tenant_id = $1 and ($2::uuid is null or b.flow_id = $2::uuid) and ($3::text is null
        or b.status = $3)
         and ($4::uuid is null or b.id < $4::uuid) order by b.id desc limit $5`,
      [tenantId, filter.flowId ?? null, filter.status ?? null, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toBatch, (r) => r.id);
  }

  async setBatchStatus(tenantId: string, id: string, status: BatchStatus) {
    await this.db.query(
      `update batches set status = $3, finished_at = case when $3 in ('succeeded', 'failed') then now() else null end
        where tenant_id = $1 and id = $2`,
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
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, topic, body, headers, query,
           keep_days)
         select $1, message_id, flow_id, flow_version, 'batch:' || $2 || ':' || key, 'poll',
           coalesce(item, 'null'::jsonb), '{}', '{}', keep_days($1) from fresh
       ), s as (
         insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at,
           keep_days)
         select $1, run_id, node_id, node_id, 'succeeded', 1, item, null, now(), now(), keep_days($1) from fresh
       ), r as (
         insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, batch_id, keep_days)
         select $1, run_id, flow_id, flow_version, message_id, 'queued', $2, keep_days($1) from fresh
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
      `select t.seq, t.batch_id, t.key, t.run_id, t.retries, r.status, r.error from batch_tasks t join runs r
        on r.tenant_id = t.tenant_id and r.id = t.run_id
        where t.tenant_id = $1 and t.batch_id = $2 and ($3::text is null or r.status = $3) and ($4::bigint is null
          or t.seq > $4::bigint)
        order by t.seq limit $5`,
      [tenantId, batchId, filter.status ?? null, after, request.first + 1],
    );
    return page(rows, request, toBatchTask, (r) => String(r.seq));
  }

  async retryFailedTasks(tenantId: string, batchId: string, newId: () => string, limit: number) {
    if (!isUuid(batchId)) return { runs: [], more: false };
    const failed = await this.db.query(
      `select t.key, t.run_id from batch_tasks t join runs r on r.tenant_id = t.tenant_id and r.id = t.run_id
        where t.tenant_id = $1 and t.batch_id = $2 and r.status = 'failed' order by t.seq limit $3`,
      [tenantId, batchId, limit + 1],
    );
    if (failed.length === 0) return { runs: [], more: false };
    const rows = failed.slice(0, limit).map((row) => ({ key: row.key, old_run: row.run_id, run_id: newId() }));
    const inserted = await this.db.query(
      `with input as (
         select * from jsonb_to_recordset($3::jsonb) as x(key text, old_run uuid, run_id uuid)
       ), ${retryTasks('$1', '$2::uuid', 'input', 'null::uuid', 'false')}
       select * from retried`,
      [tenantId, batchId, JSON.stringify(rows)],
    );
    return { runs: inserted.map(toRun), more: failed.length > limit };
  }

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
      `select * from incremental_fields where tenant_id = $1 and ($2::uuid is null or flow_id > $2::uuid)
        order by flow_id limit $3`,
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
      `insert into incremental_fields (tenant_id, flow_id, field, value, moved_at, overlap_ms) values ($1, $2, $3, $4,
        case when $4::timestamptz is null then null else now() end, $5)
       on conflict (tenant_id, flow_id) do update set field = excluded.field, value = excluded.value, overlap_ms =
         excluded.overlap_ms, updated_at = now(),
         moved_at = case when incremental_fields.value is distinct from excluded.value then now()
           else incremental_fields.moved_at end
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
}
