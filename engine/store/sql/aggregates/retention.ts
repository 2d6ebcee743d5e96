import { idAt } from '../../../model/index.ts';
import type { PruneReport, RetentionPolicy, RetentionStore } from '../../port/retention.ts';
import { setTimeout } from 'node:timers/promises';
import type { SqlDriver } from '../driver.ts';
import { PARTITION_SPAN_MS } from '../migrations/20-retention.ts';
import { DELIVERY_RECOGNITION_DAYS } from './rows.ts';
import { KEPT_LONGER, moveAllOutliving, type Mover, PINNED } from './outliving.ts';

const DAY_MS = 86_400_000;
/** History is partitioned by weeks of ids (PARTITION_SPAN_MS, migration 20), each starting at a multiple of it. */
const SPAN_MS = PARTITION_SPAN_MS;
/** Partitions made this far ahead: the hourly sweep makes them too. */
export const PARTITIONS_AHEAD_MS = 7 * DAY_MS;
/** Partitioned by the week of their id, then by keep_days (migration 20). */
const HISTORY = ['messages', 'runs', 'steps'] as const;
const UNFINISHED = "('queued', 'running', 'waiting', 'held')";
/** Row-by-row deletes go in statements of this many rows, for at most this long a sweep. */
const ROW_BATCH = 2_000;
/** The pause after dropping a detached leaf, in multiples of the time the drop took. */
const DROP_PACE = 3;
/**
 * A leaf this large (its table, indexes and TOAST) stalls every other commit while its drop frees its files: the
 * pause after it is LARGE_DROP_PACE times the drop's time, so that the stalls are 1 % of the sweep's time at most
 * and stay out of intake's 99th percentile (DROP_PAUSE_MAX_MS at most: a few weeks' leaves go within the hour).
 */
const LARGE_LEAF_BYTES = 64 * 2 ** 20;
const LARGE_DROP_PACE = 99;
const DROP_PAUSE_MAX_MS = 20_000;
const ROW_BUDGET_MS = 20_000;
/**
 * DDL (making and dropping partitions) locks the partitioned table: it waits this long for its lock, then gives up
 * until the next sweep, so that writes queue behind it for half a second at most.
 */
const DDL = "set local lock_timeout = '500ms';";

/** Days a tenant's failed and handled runs are kept: its own setting, never fewer than its other runs'. */
const FAILED_KEEP = `least(greatest(coalesce((t.limits->>'failedRetentionDays')::smallint, p.failed_days),
  keep_days(t.id)), p.max_days)`;
const TENANT_KEEP = `(select t.id as tenant_id, keep_days(t.id) as days, ${FAILED_KEEP} as failed
  from tenants t, retention_policy p)`;

interface Leaf {
  /** The start of its week. */
  week: number;
  /** keep_days of the leaf, or null for the week's default partition (rows of a retention it had no leaf for). */
  keep: number | null;
}

/** Retention: week partitions of history made ahead, dropped whole when past, and what must outlive them kept. */
export class SqlRetention implements RetentionStore {
  constructor(private readonly db: SqlDriver) {}

  async setRetentionPolicy(policy: RetentionPolicy) {
    await this.db.query('update retention_policy set days = $1, failed_days = $2, max_days = $3', [
      policy.days,
      Math.max(policy.failedDays, policy.days),
      policy.maxDays,
    ]);
  }

  async preparePartitions(fromMs: number, toMs: number) {
    const [{ classes }] = await this.db.query<{ classes: number[] }>(
      `select array_agg(distinct k) as classes from (
         select days as k from retention_policy union all select failed_days from retention_policy
         union all select keep_days(t.id) from tenants t
         union all select ${FAILED_KEEP} from tenants t, retention_policy p) keeps`,
    );
    const legacyEnd = await this.legacyEnd();
    for (let week = weekOf(fromMs); week <= toMs; week += SPAN_MS)
      if (legacyEnd === null || week >= legacyEnd) await this.createWeek(week, classes);
  }

  async pruneExpired(nowMs: number): Promise<PruneReport> {
    const report: PruneReport = { partitionsDropped: 0, rowsKept: 0, rowsDeleted: 0 };
    const [policy] = await this.db.query<{ max_days: number }>('select max_days from retention_policy');
    const leaves = await this.leaves();
    // A week's default partition goes last: it holds rows of any retention, up to the longest.
    const expired = leaves
      .filter((leaf) => leaf.keep !== PINNED && leaf.week + SPAN_MS + DAY_MS * (leaf.keep ?? policy.max_days) <= nowMs)
      .sort((a, b) => a.week - b.week || (a.keep ?? Number.MAX_SAFE_INTEGER) - (b.keep ?? Number.MAX_SAFE_INTEGER));
    for (const leaf of expired) {
      try {
        report.rowsKept += await this.dropLeaf(leaf, nowMs);
        report.partitionsDropped += HISTORY.length;
      } catch (error) {
        // Another sweep may have dropped it since it was listed (42P01).
        if (!(error instanceof LeafInUse) && !isLockTimeout(error) && codeOf(error) !== '42P01') throw error;
      }
    }
    await this.dropDetached();
    report.rowsDeleted += await this.deletePinned(nowMs);
    for (const week of new Set(expired.map((leaf) => leaf.week))) await this.dropWeekIfEmpty(week);
    await this.pruneAround(nowMs, policy.max_days);
    return report;
  }

  /** Moves out of the leaf what must outlive it, then detaches it (messages, runs and steps of that week and keep). */
  private async dropLeaf(leaf: Leaf, nowMs: number): Promise<number> {
    const name = leafName(leaf);
    const keeps =
      leaf.keep === null
        ? (
            await this.db.query<{ k: number }>(
              HISTORY.map((table) => `select keep_days as k from ${table}_${name}`).join(' union '),
            )
          ).map((r) => r.k)
        : [leaf.keep];
    const failedKeeps = await this.db.query<Mover>(
      `select t.id as "tenantId", ${FAILED_KEEP} as failed from tenants t, retention_policy p`,
    );
    // Where the kept rows go must be a leaf of its own, not the default partition being dropped.
    await this.createWeek(leaf.week, [PINNED, ...new Set(failedKeeps.map((tenant) => tenant.failed))]);
    // Tenants whose failed and handled runs of this leaf outlive it: kept longer, and not past that too.
    const movers = failedKeeps.filter(
      (tenant) =>
        !(keeps.length === 1 && keeps[0] === tenant.failed) && leaf.week + SPAN_MS + tenant.failed * DAY_MS > nowMs,
    );
    // Moved ahead at half pace, so that intake does not wait on one long statement; what comes to need keeping
    // meanwhile is moved as the leaf goes.
    let kept = await moveAllOutliving(this.db, leaf.week, keeps, movers, true);
    return this.db.transaction(
      async (tx) => {
        // Every worker sweeps: one at a time drops, the others find the leaf gone or leave it to the next sweep.
        const [{ mine }] = await tx.query<{ mine: boolean }>('select pg_try_advisory_xact_lock(7263542) as mine');
        if (!mine) throw new LeafInUse();
        await tx.exec(DDL);
        kept += await moveAllOutliving(tx, leaf.week, keeps, movers, false);
        // A running run writes steps: its week waits for the next sweep (the moves of this transaction are undone).
        const running = await tx.query(
          "select 1 from runs where id >= $1 and id < $2 and keep_days = any($3::smallint[]) and status = 'running' limit 1",
          [idAt(leaf.week), idAt(leaf.week + SPAN_MS), keeps],
        );
        if (running.length > 0) throw new LeafInUse();
        // Detached here, dropped after (dropDetached): a drop's commit frees the leaf's files.
        await tx.exec(
          HISTORY.map((table) => `alter table ${table}_d${dayName(leaf.week)} detach partition ${table}_${name}`).join(
            ';',
          ),
        );
        return kept;
      },
      { closeAfter: true },
    );
  }

  /**
   * Deletes, a batch at a time, rows kept past their partition (and rows written before partitioning) that are
   * past their tenant's retention now: a finished run by when it finished, a message once it has no run.
   */
  private async deletePinned(nowMs: number): Promise<number> {
    const started = Date.now();
    let deleted = 0;
    for (;;) {
      const [{ runs, steps }] = await this.db.query<{ runs: number; steps: number }>(
        `with doomed as (
           select r.tenant_id, r.id from runs r join ${TENANT_KEEP} k on k.tenant_id = r.tenant_id
            where r.keep_days = ${PINNED} and r.status not in ${UNFINISHED}
              and coalesce(r.finished_at, r.created_at) < $1::timestamptz
                - make_interval(days => case when r.status in ${KEPT_LONGER} then k.failed else k.days end)
            limit $2
         ), gone_steps as (
           delete from steps s using doomed d
            where s.tenant_id = d.tenant_id and s.run_id = d.id and s.keep_days = ${PINNED} returning 1
         ), gone_runs as (
           delete from runs r using doomed d
            where r.tenant_id = d.tenant_id and r.id = d.id and r.keep_days = ${PINNED} returning 1
         )
         select (select count(*) from gone_runs) as runs, (select count(*) from gone_steps) as steps`,
        [iso(nowMs), ROW_BATCH],
      );
      const [{ messages }] = await this.db.query<{ messages: number }>(
        `with doomed as (
           select m.tenant_id, m.id from messages m join ${TENANT_KEEP} k on k.tenant_id = m.tenant_id
            where m.keep_days = ${PINNED} and m.id < id_at($1::bigint - k.days * ${DAY_MS}::bigint)
              and not exists (select 1 from runs r where r.tenant_id = m.tenant_id and r.message_id = m.id)
            limit $2
         ), gone as (
           delete from messages m using doomed d
            where m.tenant_id = d.tenant_id and m.id = d.id and m.keep_days = ${PINNED} returning 1
         )
         select count(*) as messages from gone`,
        [nowMs, ROW_BATCH],
      );
      deleted += Number(runs) + Number(steps) + Number(messages);
      const more = Number(runs) === ROW_BATCH || Number(messages) === ROW_BATCH;
      if (!more || Date.now() - started > ROW_BUDGET_MS) return deleted;
    }
  }

  /**
   * Drops the leaves detached from history (by dropLeaf, or by a sweep that stopped before it dropped them) one at
   * a time: a drop's commit frees the leaf's files (gigabytes at 10 million runs), and while the disk does that
   * every other commit waits for its write-ahead log. Each drop is followed by a pause in proportion to what it
   * took: the stalls of two large drops never add up, and few of intake's requests meet one.
   */
  private async dropDetached() {
    const detached = await this.db.query<{ name: string; bytes: string }>(
      `select relname as name, pg_total_relation_size(oid) as bytes from pg_class
        where relnamespace = current_schema()::regnamespace and relkind = 'r' and not relispartition
          and relname ~ '^(messages|runs|steps)_d[0-9]{8}_(k[0-9]+|default)$'`,
    );
    for (const { name, bytes } of detached) {
      const started = performance.now();
      await this.ddl(`drop table if exists ${name}`).catch((error) => {
        if (!isLockTimeout(error)) throw error;
      });
      const took = performance.now() - started;
      const pace = Number(bytes) >= LARGE_LEAF_BYTES ? LARGE_DROP_PACE : DROP_PACE;
      await setTimeout(Math.min(pace * took, DROP_PAUSE_MAX_MS));
    }
  }

  /** A week none of whose leaves holds a row any more goes whole. */
  private async dropWeekIfEmpty(week: number) {
    const name = `d${dayName(week)}`;
    const left = await this.db.query(
      `select 1 from messages where id >= $1 and id < $2 union all select 1 from runs where id >= $1 and id < $2
        union all select 1 from steps where run_id >= $1 and run_id < $2 limit 1`,
      [idAt(week), idAt(week + SPAN_MS)],
    );
    if (left.length > 0) return;
    await this.ddl(`drop table if exists ${HISTORY.map((table) => `${table}_${name}`).join(', ')}`).catch((error) => {
      if (!isLockTimeout(error)) throw error;
    });
  }

  /** What refers to history or counts it: deliveries past recognition, rollups, replays and batches past the longest retention. */
  private async pruneAround(nowMs: number, maxDays: number) {
    // Narrow rows (a delivery id each), in batches: a day of them is not a partition of its own (decision 24).
    const firstDelivery = iso(dayOf(nowMs) - DELIVERY_RECOGNITION_DAYS * DAY_MS).slice(0, 10);
    for (;;) {
      const gone = await this.db.query(
        `delete from deliveries where ctid = any(array(select ctid from deliveries where day < $1::date limit $2))
         returning 1`,
        [firstDelivery, ROW_BATCH * 5],
      );
      if (gone.length < ROW_BATCH * 5) break;
    }
    const before = iso(nowMs - maxDays * DAY_MS);
    await this.db.query(
      `with a as (delete from run_counts where period < $1), b as (delete from message_counts where period < $1),
            c as (delete from message_outcomes where hour < $1), d as (delete from run_timings where period < $1),
            e as (delete from replays where status <> 'running' and created_at < $1)
       delete from batches b using ${TENANT_KEEP} k
        where b.tenant_id = k.tenant_id and b.finished_at < $2::timestamptz - make_interval(days => k.days)`,
      [before, iso(nowMs)],
    );
  }

  /** Where the rows written before partitioning (migration 20) end, when there were any. */
  private async legacyEnd(): Promise<number | null> {
    const [row] = await this.db.query<{ bound: string | null }>(
      "select pg_get_expr(relpartbound, oid) as bound from pg_class where oid = to_regclass('messages_legacy')",
    );
    const id = row?.bound?.match(/'([0-9a-f-]{36})'/)?.[1];
    return id ? Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16) : null;
  }

  /** The leaves of messages (runs and steps have the same), by week and keep. */
  private async leaves(): Promise<Leaf[]> {
    const rows = await this.db.query<{ name: string }>(
      "select relid::regclass::text as name from pg_partition_tree('messages') where isleaf",
    );
    const leaves: Leaf[] = [];
    for (const { name } of rows) {
      const match = /messages_d(\d{8})_(?:k(\d+)|default)$/.exec(name);
      if (match) leaves.push({ week: dayFromName(match[1]), keep: match[2] === undefined ? null : Number(match[2]) });
    }
    return leaves;
  }

  /** The week's partition of each history table, its default, and a leaf for each of `keeps`: those missing. */
  private async createWeek(week: number, keeps: number[]) {
    const name = `d${dayName(week)}`;
    const statements: [table: string, statement: string][] = [];
    for (const table of HISTORY) {
      const key = table === 'steps' ? '' : ' (primary key (tenant_id, id))';
      // Each leaf is analyzed while empty: the planner takes a table never analyzed for at least 10 pages, and
      // with a dozen such leaves a run's lookup by key seemed dearer than hashing a scan of them all.
      // A leaf of runs keeps statistics of tenant and status together (migration 29).
      const statistics = (leaf: string) =>
        table === 'runs'
          ? `create statistics if not exists ${leaf}_tenant_status (mcv) on tenant_id, status from ${leaf};`
          : '';
      const leaf = (suffix: string, bound: string): [string, string] => [
        `${table}_${name}_${suffix}`,
        `create table if not exists ${table}_${name}_${suffix} partition of ${table}_${name}${key} ${bound};
         ${statistics(`${table}_${name}_${suffix}`)}
         analyze ${table}_${name}_${suffix}`,
      ];
      statements.push(
        [
          `${table}_${name}`,
          `create table if not exists ${table}_${name} partition of ${table}
             for values from ('${idAt(week)}') to ('${idAt(week + SPAN_MS)}') partition by list (keep_days)`,
        ],
        leaf('default', 'default'),
        ...keeps.map((keep) => leaf(`k${keep}`, `for values in (${keep})`)),
      );
    }
    // Each statement is a connection of its own (ddl), and analyzing a full leaf reads it: only what is missing.
    const rows = await this.db.query<{ table: string }>(
      'select t as table from unnest($1::text[]) t where to_regclass(t) is null',
      [statements.map(([table]) => table)],
    );
    const missing = new Set(rows.map((row) => row.table));
    for (const [table, statement] of statements) if (missing.has(table)) await this.tolerantDdl(statement);
  }

  /**
   * Makes a partition unless: rows for it are in the default partition already (23514: a retention first used
   * after its week began; they stay there, and go with it); another process's sweep makes it at once (42P07, or
   * 23505 on its type's name); it waited too long for its lock (55P03: the next sweep makes it, ahead of need).
   */
  private async tolerantDdl(statement: string) {
    await this.ddl(statement).catch((error) => {
      if (!['23514', '42P07', '23505', '55P03'].includes(codeOf(error) ?? '')) throw error;
    });
  }

  /**
   * On a connection closed after: one that made partitions ran every later insert into them slower (a delivery
   * 2.2-3.6 ms against 1.1-1.5 on another connection, PostgreSQL 15).
   */
  private async ddl(statement: string) {
    await this.db.transaction(async (tx) => tx.exec(`${DDL} ${statement}`), { closeAfter: true });
  }
}

/** A leaf that cannot go yet: it holds a running run, or another sweep is dropping one. */
class LeafInUse extends Error {}

function leafName(leaf: Leaf) {
  return `d${dayName(leaf.week)}_${leaf.keep === null ? 'default' : `k${leaf.keep}`}`;
}

const dayOf = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
const weekOf = (ms: number) => Math.floor(ms / SPAN_MS) * SPAN_MS;
const dayName = (day: number) => new Date(day).toISOString().slice(0, 10).replace(/-/g, '');
const dayFromName = (name: string) => Date.UTC(+name.slice(0, 4), +name.slice(4, 6) - 1, +name.slice(6, 8));
const iso = (ms: number) => new Date(ms).toISOString();
const codeOf = (error: unknown) => (error as { code?: string }).code;
const isLockTimeout = (error: unknown) => codeOf(error) === '55P03';
