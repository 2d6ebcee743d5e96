/**
 * (j) Months of history: every read of HISTORY_READS for a large tenant (a) and a small one (b), on a store
 * holding only their flows and one real run each, then on the same store after tenant a grew to
 * BENCH_HISTORY_RUNS runs (default 1,000,000) over 60 days by SQL from its real rows, 5 % failed, and b to
 * 1,000; 20 calls each, p50, with the growth factor; what the history takes on disk per message; and how long
 * the retention sweep takes to drop what is past 30 days (about half of it).
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Store } from '../engine/store/port.ts';
import { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { HISTORY_READS, historyTenant, seedHistory } from '../test/support/history.ts';
import { isolation, POSTGRES_URL } from './processes.ts';

const RUNS = Number(process.env.BENCH_HISTORY_RUNS ?? 1_000_000);
const CALLS = 20;
const TENANTS = { a: RUNS, b: 1_000 };

type Timings = Record<string, number>;

async function p50Ms(read: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await read();
    times.push(performance.now() - start);
  }
  times.sort((x, y) => x - y);
  return Math.round(times[CALLS / 2] * 10) / 10;
}

async function measureReads(store: Store, flows: Record<string, string[]>): Promise<Timings> {
  const timings: Timings = {};
  for (const [name, read] of HISTORY_READS)
    for (const tenantId of Object.keys(TENANTS))
      timings[`${name} (${tenantId})`] = await p50Ms(() => read(store, tenantId, flows[tenantId]));
  return timings;
}

export async function measureHistory(results: Record<string, unknown>) {
  const schema = isolation().DATABASE_SCHEMA;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const driver = new PgDriver({ connectionString: POSTGRES_URL, schema });
  const store = await SqlStore.open(driver);
  try {
    const flows: Record<string, string[]> = {};
    for (const tenantId of Object.keys(TENANTS)) flows[tenantId] = await historyTenant(store, tenantId);
    const empty = await measureReads(store, flows);
    const seedStart = performance.now();
    await store.preparePartitions(Date.now() - 61 * 86_400_000, Date.now());
    for (const [tenantId, runs] of Object.entries(TENANTS))
      await seedHistory(driver, { tenantId, flowIds: flows[tenantId], runs, days: 60 });
    const seedSeconds = Math.round((performance.now() - seedStart) / 1000);
    await admin.query(`vacuum analyze ${schema}.messages, ${schema}.runs, ${schema}.steps`);
    const seeded = await measureReads(store, flows);
    // A partitioned table's size is its partitions'.
    const { rows: sizes } = await admin.query(
      `select c.relname as table, sum(pg_total_relation_size(t.relid)) as bytes, sum(pg_indexes_size(t.relid))
              as index_bytes
         from pg_class c join pg_namespace n on n.oid = c.relnamespace cross join pg_partition_tree(c.oid) t
        where n.nspname = $1 and c.relname = any($2::text[]) group by 1 order by 1`,
      [schema, ['messages', 'runs', 'steps', 'deliveries', 'run_counts', 'run_timings', 'message_counts']],
    );
    // The weeks past 30 days' retention (about half the 60 seeded), dropped as the hourly sweep does.
    const pruneStart = performance.now();
    const pruned = await store.pruneExpired(Date.now());
    const pruneMs = Math.round(performance.now() - pruneStart);
    const messages = RUNS + TENANTS.b + 2;
    const history = {
      runs: RUNS,
      seedSeconds,
      reads: Object.fromEntries(
        Object.keys(empty).map((read) => [
          read,
          { emptyMs: empty[read], seededMs: seeded[read], growth: Math.round((seeded[read] / empty[read]) * 10) / 10 },
        ]),
      ),
      disk: Object.fromEntries(
        sizes.map((row) => [
          row.table,
          { mb: Math.round(Number(row.bytes) / 1e6), indexMb: Math.round(Number(row.index_bytes) / 1e6) },
        ]),
      ),
      bytesPerMessage: Math.round(sizes.reduce((sum, row) => sum + Number(row.bytes), 0) / messages),
      prune: { ms: pruneMs, ...pruned },
    };
    results.history = history;
    console.log(`\n| read, p50 of ${CALLS} | empty | ${RUNS.toLocaleString('en')} runs | growth |\n|---|---|---|---|`);
    for (const [read, figures] of Object.entries(history.reads))
      console.log(`| ${read} | ${figures.emptyMs} ms | ${figures.seededMs} ms | ${figures.growth}x |`);
    console.log(`\nseeded in ${seedSeconds} s; ${history.bytesPerMessage} bytes per message on disk, indexes included`);
    console.log(
      `pruned past 30 days in ${pruneMs} ms: ${pruned.partitionsDropped} partitions dropped, ` +
        `${pruned.rowsKept} rows kept, ${pruned.rowsDeleted} deleted`,
    );
  } finally {
    await store.close();
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}
