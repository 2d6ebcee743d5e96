/**
 * (j) Months of history: every read of HISTORY_READS for a large tenant (a) and a small one (b), on a store
 * holding only their flows and one real run each (empty), then once tenant a has 10,000 runs over 60 days by SQL
 * from its real rows, 5 % failed, and b 1,000 (filled: every page and bucket full, the answers as large as they
 * will be), then after tenant a grew to BENCH_HISTORY_RUNS runs (default 1,000,000); 20 calls each, p50, with the
 * growth factor from filled to grown: what the store's size costs, the answers' size aside. The writes on both: an API process's intake at 50
 * connections and the engine's drain of ENGINE_RUNS runs. What the history takes on disk per message, and how
 * long the retention sweep takes to drop what is past 30 days (about half of it) while the API process takes
 * webhooks, with their p99 beside that without the sweep.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Store } from '../engine/store/port.ts';
import { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import {
  HISTORY_READS,
  type HistorySample,
  historySample,
  historyTenant,
  seedHistory,
} from '../test/support/history.ts';
import { RecordingDriver, explainedPlan } from '../test/support/plans.ts';
import type { PruneReport } from '../engine/store/port/retention.ts';
import { drainEngine, ENGINE_RUNS, startReceiver } from './engine.ts';
import { accepted, loadIntake } from './intake.ts';
import { isolation, POSTGRES_URL, start, stop } from './processes.ts';

const RUNS = Number(process.env.BENCH_HISTORY_RUNS ?? 1_000_000);
const CALLS = 20;
const TENANTS = { a: RUNS, b: 1_000 };
/** The filled store's runs of each tenant. */
const FILLED = { a: 10_000, b: 1_000 };

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

/** A figure on the empty store and on the grown one, and their ratio. */
const growth = (empty: number, seeded: number) => ({
  empty: Math.round(empty),
  seeded: Math.round(seeded),
  ratio: Math.round((seeded / empty) * 100) / 100,
});

/** The retention sweep, timed. */
async function timedSweep(store: Store) {
  const start = performance.now();
  const report = await store.pruneExpired(Date.now());
  return { ms: Math.round(performance.now() - start), ...report };
}

/**
 * Each read's statements for a tenant, with the plans they run by and their times, as markdown
 * (docs/plans.md): the statements that `store` sends through `recording`.
 */
export async function statementPlans(
  store: Store,
  recording: RecordingDriver,
  schema: string,
  tenantId: string,
  sample: HistorySample,
): Promise<string> {
  const sections: string[] = [];
  for (const [name, read] of HISTORY_READS) {
    const statements = await recording.during(() => read(store, tenantId, sample));
    sections.push(`### ${name}`);
    for (const statement of statements) {
      const { plan, ms } = await explainedPlan(POSTGRES_URL, schema, statement);
      sections.push(
        `${ms} ms, planned ${statement.generic ? 'once (generic)' : 'for its values'}:`,
        '```sql',
        statement.text.replace(/\n\s*\n/g, '\n').trim(),
        '```',
        '```',
        ...plan,
        '```',
      );
    }
  }
  return sections.join('\n');
}

async function measureReads(store: Store, flows: Record<string, string[]>): Promise<Timings> {
  const timings: Timings = {};
  for (const tenantId of Object.keys(TENANTS)) {
    const sample = await historySample(store, tenantId, flows[tenantId]);
    for (const [name, read] of HISTORY_READS)
      timings[`${name} (${tenantId})`] = await p50Ms(() => read(store, tenantId, sample));
  }
  return timings;
}

export async function measureHistory(results: Record<string, unknown>) {
  const schema = isolation().DATABASE_SCHEMA;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const driver = new PgDriver({ connectionString: POSTGRES_URL, schema });
  const recording = new RecordingDriver(driver);
  const store = await SqlStore.open(recording);
  const receiver = await startReceiver();
  // The processes measured on the store: an API process taking webhooks, and the engine's drain (bench/engine.ts).
  const onStore = { ...isolation(), DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema };
  const api = await start(['--import', 'tsx', 'bench/child.ts', 'tributary'], onStore);
  const intake = async (during?: () => Promise<unknown>) =>
    accepted(await loadIntake(api.detail, api.child.pid, during));
  const drain = async () => {
    // The intake's runs are not the drain's: its worker would take them up (the store has them queued).
    await driver.query(
      "update runs set status = 'cancelled', finished_at = now() where tenant_id = 'bench' and status = 'queued'",
    );
    const { seconds } = await drainEngine(receiver, {}, { DATABASE_SCHEMA: schema });
    return ENGINE_RUNS / seconds;
  };
  try {
    const flows: Record<string, string[]> = {};
    for (const tenantId of Object.keys(TENANTS)) flows[tenantId] = await historyTenant(store, tenantId);
    const empty = await measureReads(store, flows);
    const emptyIntake = await intake();
    const emptyDrain = await drain();
    const seedStart = performance.now();
    await store.preparePartitions(Date.now() - 61 * 86_400_000, Date.now());
    const grow = async (runs: Record<string, number>) => {
      for (const [tenantId, count] of Object.entries(runs))
        if (count > 0) await seedHistory(driver, { tenantId, flowIds: flows[tenantId], runs: count, days: 60 });
      await admin.query(`vacuum analyze ${schema}.messages, ${schema}.runs, ${schema}.steps`);
    };
    await grow(FILLED);
    const filled = await measureReads(store, flows);
    await grow({ a: TENANTS.a - FILLED.a });
    const seedSeconds = Math.round((performance.now() - seedStart) / 1000);
    const seeded = await measureReads(store, flows);
    const plans = await statementPlans(store, recording, schema, 'a', await historySample(store, 'a', flows.a));
    // A partitioned table's size is its partitions'.
    const { rows: sizes } = await admin.query(
      `select c.relname as table, sum(pg_total_relation_size(t.relid)) as bytes, sum(pg_indexes_size(t.relid))
              as index_bytes
         from pg_class c join pg_namespace n on n.oid = c.relnamespace cross join pg_partition_tree(c.oid) t
        where n.nspname = $1 and c.relname = any($2::text[]) group by 1 order by 1`,
      [schema, ['messages', 'runs', 'steps', 'deliveries', 'run_counts', 'run_timings', 'message_counts']],
    );
    // The weeks past 30 days' retention (about half the 60 seeded), dropped as the hourly sweep does while the API
    // process takes webhooks. The drain comes after: its worker's first sweep would drop them while it ran.
    const seededIntake = await intake();
    let sweep!: Promise<PruneReport & { ms: number }>;
    const whilePruning = await intake(() => (sweep = timedSweep(store)));
    const prune = await sweep;
    const seededDrain = await drain();
    const messages = RUNS + TENANTS.b + 2;
    const history = {
      runs: RUNS,
      seedSeconds,
      reads: Object.fromEntries(
        Object.keys(empty).map((read) => [
          read,
          {
            emptyMs: empty[read],
            filledMs: filled[read],
            seededMs: seeded[read],
            growth: Math.round((seeded[read] / filled[read]) * 10) / 10,
          },
        ]),
      ),
      disk: Object.fromEntries(
        sizes.map((row) => [
          row.table,
          { mb: Math.round(Number(row.bytes) / 1e6), indexMb: Math.round(Number(row.index_bytes) / 1e6) },
        ]),
      ),
      bytesPerMessage: Math.round(sizes.reduce((sum, row) => sum + Number(row.bytes), 0) / messages),
      prune,
      writes: {
        intakeRequestsPerSecond: growth(emptyIntake.requestsPerSecond, seededIntake.requestsPerSecond),
        intakeP99Ms: growth(emptyIntake.p99Ms, seededIntake.p99Ms),
        drainRunsPerSecondAfterTheSweep: growth(emptyDrain, seededDrain),
      },
      intakeWhilePruning: {
        requestsPerSecond: whilePruning.requestsPerSecond,
        p99Ms: whilePruning.p99Ms,
        p99Ratio: Math.round((whilePruning.p99Ms / seededIntake.p99Ms) * 100) / 100,
      },
    };
    results.history = history;
    console.log(
      `\n| read, p50 of ${CALLS} | empty | filled (${FILLED.a.toLocaleString('en')} runs) | ` +
        `${RUNS.toLocaleString('en')} runs | growth from filled |\n|---|---|---|---|---|`,
    );
    for (const [read, figures] of Object.entries(history.reads))
      console.log(
        `| ${read} | ${figures.emptyMs} ms | ${figures.filledMs} ms | ${figures.seededMs} ms | ${figures.growth}x |`,
      );
    console.log(`\nseeded in ${seedSeconds} s; ${history.bytesPerMessage} bytes per message on disk, indexes included`);
    console.log(
      `pruned past 30 days in ${prune.ms} ms: ${prune.partitionsDropped} partitions dropped, ` +
        `${prune.rowsKept} rows kept, ${prune.rowsDeleted} deleted`,
    );
    console.log(`\n| write | empty | ${RUNS.toLocaleString('en')} runs | ratio |\n|---|---|---|---|`);
    for (const [write, figures] of Object.entries(history.writes))
      console.log(`| ${write} | ${figures.empty} | ${figures.seeded} | ${figures.ratio}x |`);
    const { requestsPerSecond, p99Ms, p99Ratio } = history.intakeWhilePruning;
    console.log(`intake while the sweep ran: ${requestsPerSecond} req/s, p99 ${p99Ms} ms (${p99Ratio}x without)`);
    console.log(`\n## The statements of each read of tenant a at ${RUNS.toLocaleString('en')} runs\n\n${plans}`);
  } finally {
    await stop(api.child);
    await receiver.close();
    await store.close();
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}
