import { setTimeout } from 'node:timers/promises';
import { idAt } from '../../../model/index.ts';
import type { SqlExecutor } from '../driver.ts';
import { PARTITION_SPAN_MS as SPAN_MS } from '../migrations/20-retention.ts';

/** keep_days of rows kept past their partition (and of rows written before partitioning): deleted row by row. */
export const PINNED = 0;
/** The statuses kept as long as a tenant keeps its failures. */
export const KEPT_LONGER = "('failed', 'handled')";
/** Runs moved out of a leaf a statement at a time (with their steps and messages): about 100 ms of work. */
export const MOVE_BATCH = 500;

/** A tenant whose failed and handled runs are kept `failed` days. */
export interface Mover {
  tenantId: string;
  failed: number;
}

/**
 * Moves a batch of the runs of a week's leaves of `keeps` that must outlive them to the leaves they belong in now,
 * with their steps and messages: unfinished runs to the pinned leaf, failed and handled runs of `movers` to
 * their retention's leaf; and pins the messages run again in a later week. Each kind is found by its partial
 * index, not by reading the leaf, and each run by its key (a batch's estimate stays small).
 */
async function moveOutliving(db: SqlExecutor, week: number, keeps: number[], movers: Mover[]) {
  const [moved] = await db.query<{ runs: number; kept: number }>(
    `with outliving as (
       select r.tenant_id, r.id, ${PINNED} as keep_days from runs r
        where r.id >= $1 and r.id < $2 and r.keep_days = any($3::smallint[]) and r.status in ('queued', 'waiting')
       union all
       select r.tenant_id, r.id, ${PINNED} from runs r
        where r.id >= $1 and r.id < $2 and r.keep_days = any($3::smallint[]) and r.status = 'held'
       union all
       select r.tenant_id, r.id, k.failed from unnest($4::text[], $5::smallint[]) k (tenant_id, failed)
         cross join lateral (
           select r.tenant_id, r.id from runs r
            where r.tenant_id = k.tenant_id and r.status in ${KEPT_LONGER} and r.id >= $1 and r.id < $2
              and r.keep_days = any($3::smallint[]) and r.keep_days <> k.failed) r
       limit ${MOVE_BATCH}
     ), moved as (
       update runs r set keep_days = o.keep_days from outliving o
        where r.tenant_id = o.tenant_id and r.id = o.id and r.id >= $1 and r.id < $2
          and r.keep_days = any($3::smallint[])
       returning r.tenant_id, r.id, r.message_id, r.keep_days
     ), moved_steps as (
       update steps s set keep_days = m.keep_days from moved m
        where s.tenant_id = m.tenant_id and s.run_id = m.id and s.run_id >= $1 and s.run_id < $2
          and s.keep_days = any($3::smallint[])
       returning 1
     ), message_keeps as (
       select tenant_id, message_id, keep_days from moved
       union all
       -- Messages run again in a later week (a replay, a retry) stay while those runs do.
       select tenant_id, message_id, ${PINNED} from runs l
        where id_ms(l.id) / ${SPAN_MS} <> id_ms(l.message_id) / ${SPAN_MS} and l.message_id >= $1 and l.message_id < $2
     ), moved_messages as (
       update messages x set keep_days = mk.keep_days
         from (select tenant_id, message_id, min(keep_days) as keep_days from message_keeps group by 1, 2) mk
        where x.tenant_id = mk.tenant_id and x.id = mk.message_id and x.id >= $1 and x.id < $2
          and x.keep_days = any($3::smallint[])
       returning 1
     )
     select (select count(*) from moved) as runs,
            (select count(*) from moved) + (select count(*) from moved_steps) + (select count(*) from moved_messages)
              as kept`,
    [
      idAt(week),
      idAt(week + SPAN_MS),
      keeps,
      movers.map((mover) => mover.tenantId),
      movers.map((mover) => mover.failed),
    ],
  );
  return { runs: Number(moved.runs), kept: Number(moved.kept) };
}

/** Moves batches until one comes short, each followed by as long a pause when `paced`; the rows moved. */
export async function moveAllOutliving(
  db: SqlExecutor,
  week: number,
  keeps: number[],
  movers: Mover[],
  paced: boolean,
) {
  let kept = 0;
  for (;;) {
    const started = performance.now();
    const batch = await moveOutliving(db, week, keeps, movers);
    kept += batch.kept;
    if (batch.runs < MOVE_BATCH) return kept;
    if (paced) await setTimeout(performance.now() - started);
  }
}
