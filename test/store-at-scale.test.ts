import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../engine/model/ids.ts';
import { REPLAY_COUNT_LIMIT } from '../engine/model/index.ts';
import type { Store } from '../engine/store/port.ts';
import { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { POSTGRES_URL } from './support/harness.ts';
import { HISTORY_READS, historySample, historyTenant, seedHistory } from './support/history.ts';
import { RecordingDriver, rowsRead, sequentialScans, type Statement } from './support/plans.ts';

const DAY_MS = 86_400_000;
/** Tables that grow with every message: no read may scan one whole. */
const GROWING = ['messages', 'runs', 'steps'];
/** A partition of a day and retention (migration 20), or a day's default. */
const PARTITION_SUFFIX = /_d\d{8}_(k\d+|default)$/;
const SMALL_PARTITION = 1_000;
/**
 * Rollups grow by the hour and flow, not the message: a read of half of them (the large tenant's month here)
 * may well scan them, but a small tenant's read must not pay for a large one's rows.
 */
const ROLLUPS = ['run_counts', 'run_timings', 'message_counts'];

/**
 * A store with a history: tenant `big` with 120,000 runs over 60 days (5 % failed), tenant `small` with 1,000,
 * tenant `busy` with 30,000 cancelled.
 * The reads users and operators make keep their plans free of sequential scans of a growing table, and counts
 * from rollups equal the counts of the rows.
 */
describe('a store with months of history, on PostgreSQL', () => {
  const schema = `scale_${randomBytes(5).toString('hex')}`;
  let admin: pg.Client;
  let driver: RecordingDriver;
  let store: Store;
  const rowsOf = new Map<string, number>();
  const flows: Record<string, string[]> = {};

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    driver = new RecordingDriver(new PgDriver({ connectionString: POSTGRES_URL, schema }));
    store = await SqlStore.open(driver);
    await store.preparePartitions(Date.now() - 61 * DAY_MS, Date.now());
    for (const [tenantId, runs] of [
      ['big', 120_000],
      ['small', 1_000],
    ] as const) {
      flows[tenantId] = await historyTenant(store, tenantId);
      await seedHistory(driver, { tenantId, flowIds: flows[tenantId], runs, days: 60, chunk: 40_000 });
    }
    // A third tenant whose runs were cancelled: a status rare for `big` is common over all tenants.
    flows.busy = await historyTenant(store, 'busy');
    await seedHistory(driver, { tenantId: 'busy', flowIds: flows.busy, runs: 30_000, days: 60, chunk: 40_000 });
    await driver.query("update runs set status = 'cancelled' where tenant_id = 'busy'");
    await admin.query(`analyze ${schema}.messages, ${schema}.runs, ${schema}.steps`);
    const sizes = await admin.query(
      `select c.relname, c.reltuples from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and c.relkind = 'r'`,
      [schema],
    );
    for (const row of sizes.rows) rowsOf.set(row.relname, Number(row.reltuples));
  }, 300_000);

  afterAll(async () => {
    await store?.close();
    await admin?.query(`drop schema ${schema} cascade`);
    await admin?.end();
  });

  /**
   * The tables a statement reads whole, by their partitioned table's name. A partition of a few rows (a day's
   * default, a day of the small tenant's retention) is read whole where that is cheaper than its index.
   */
  const scansOf = async (statements: Statement[], tables: string[]) => {
    const scanned = new Set<string>();
    for (const statement of statements)
      for (const table of await sequentialScans(POSTGRES_URL, schema, statement))
        if (!PARTITION_SUFFIX.test(table) || (rowsOf.get(table) ?? 0) >= SMALL_PARTITION)
          scanned.add(table.replace(PARTITION_SUFFIX, ''));
    return [...scanned].filter((table) => tables.includes(table));
  };

  /**
   * The rows statements read from growing tables, as they run, but for partitions of a few rows, which they may
   * read whole (as scansOf allows): which those are depends on the day of the week the history ends.
   */
  const growingRowsRead = async (statements: Statement[]) => {
    let read = 0;
    for (const statement of statements)
      for (const [table, rows] of Object.entries(await rowsRead(POSTGRES_URL, schema, statement)))
        if (GROWING.includes(table.replace(PARTITION_SUFFIX, '')) && (rowsOf.get(table) ?? 0) >= SMALL_PARTITION)
          read += rows;
    return read;
  };

  for (const [name, read] of HISTORY_READS) {
    it(`reads ${name} without scanning a growing table, for a large tenant and a small one`, async () => {
      for (const tenantId of ['big', 'small']) {
        const sample = await historySample(store, tenantId, flows[tenantId]);
        const statements = await driver.during(() => read(store, tenantId, sample));
        expect(statements.length).toBeGreaterThan(0);
        const tables = tenantId === 'small' ? [...GROWING, ...ROLLUPS] : GROWING;
        expect({ tenantId, scanned: await scansOf(statements, tables) }).toEqual({ tenantId, scanned: [] });
      }
    });
  }

  it('lists a page of messages of a status rare for the tenant, common for another, or common, reading about a page of rows', async () => {
    const page = 50;
    // `cancelled`: none of big's runs, 30,000 of busy's; `succeeded`: 95 % of big's.
    for (const status of ['cancelled', 'succeeded'] as const) {
      const read = await growingRowsRead(
        await driver.during(() => store.listMessages('big', { status }, { first: page }, 4096)),
      );
      // At most a page from each week's partition, and each listed message's own row.
      expect({ status, withinBound: read <= page * 20 }).toEqual({ status, withinBound: true });
    }
  });

  // By the day over the whole history (daily rollups), by the hour over the last three days (hourly ones).
  it.each([
    ['day', 61],
    ['hour', 3],
  ] as const)(
    'counts from rollups what the rows hold: runs per %s, flow and status, and messages per topic',
    async (interval, days) => {
      const from = new Date(Date.now() - days * DAY_MS);
      const to = new Date(Date.now() + DAY_MS);
      for (const tenantId of ['big', 'small']) {
        const stats = await store.statistics(tenantId, { from: from.toISOString(), to: to.toISOString(), interval });
        const { rows: truth } = await admin.query(
          `select date_trunc($2, created_at, 'UTC') as bucket, flow_id, status, count(*)::int as n
           from ${schema}.runs where tenant_id = $1 and created_at >= $3 group by 1, 2, 3`,
          [tenantId, interval, stats.from],
        );
        const counted = stats.runs.flatMap((row) =>
          Object.entries(row.counts).map(([status, n]) => `${row.bucket} ${row.flowId} ${status} ${n}`),
        );
        expect(counted.sort()).toEqual(
          truth.map((r) => `${r.bucket.toISOString()} ${r.flow_id} ${r.status} ${r.n}`).sort(),
        );
        expect(stats.runs.reduce((sum, row) => sum + row.total, 0)).toBe(truth.reduce((sum, r) => sum + r.n, 0));

        const { rows: topics } = await admin.query(
          `select topic, count(*)::int as n from ${schema}.messages where tenant_id = $1 and received_at >= $2 group by 1`,
          [tenantId, stats.from],
        );
        const byTopic = new Map<string | null, number>();
        for (const row of stats.messages) byTopic.set(row.topic, (byTopic.get(row.topic) ?? 0) + row.count);
        expect(Object.fromEntries(byTopic)).toEqual(Object.fromEntries(topics.map((r) => [r.topic, r.n])));
      }
    },
  );

  it('counts a replay\'s matches exactly up to REPLAY_COUNT_LIMIT, and past it as one more ("at least")', async () => {
    for (const tenantId of ['big', 'small']) {
      const counted = await store.countReplayable(tenantId, { status: 'failed' });
      const {
        rows: [truth],
      } = await admin.query(
        `select count(*)::int as n from ${schema}.runs where tenant_id = $1 and status = 'failed' and not superseded`,
        [tenantId],
      );
      expect({ tenantId, counted }).toEqual({ tenantId, counted: Math.min(truth.n, REPLAY_COUNT_LIMIT + 1) });
    }
    // Six thousand failed runs of big's, fifty of small's: one count stops at the limit, the other is exact.
    expect(await store.countReplayable('big', { status: 'failed' })).toBe(REPLAY_COUNT_LIMIT + 1);
    expect(await store.countReplayable('small', { status: 'failed' })).toBeLessThan(REPLAY_COUNT_LIMIT);
  });

  it("counts a replay's matches of an error kind reading those runs alone, however rare the kind", async () => {
    // big's failed runs are a third retryable, the rest permanent: none `later`.
    for (const errorKind of ['retryable', 'later'] as const) {
      const read = await growingRowsRead(
        await driver.during(() => store.countReplayable('big', { status: 'failed', errorKind })),
      );
      const {
        rows: [truth],
      } = await admin.query(
        `select count(*)::int as n from ${schema}.runs
          where tenant_id = 'big' and status = 'failed' and not superseded and error->>'kind' = $1`,
        [errorKind],
      );
      const matches = Math.min(truth.n, REPLAY_COUNT_LIMIT + 1);
      expect({ errorKind, counted: await store.countReplayable('big', { status: 'failed', errorKind }) }).toEqual({
        errorKind,
        counted: matches,
      });
      // Each match read once, none of the tenant's other failed runs (two in three of them permanent).
      expect(read, `rows read to count ${errorKind}`).toBeLessThanOrEqual(matches);
    }
  });

  it("counts the backlog's messages by their latest run's status, replays included, as the rows do", async () => {
    // Three failed messages of the last week run again: one is still queued, one succeeds, one fails again.
    const { rows: failed } = await admin.query(
      `select m.id from ${schema}.messages m join ${schema}.runs r on r.tenant_id = m.tenant_id and r.message_id = m.id
        where m.tenant_id = 'big' and r.status = 'failed' and m.received_at > now() - interval '7 days'
        order by m.id limit 3`,
    );
    expect(failed).toHaveLength(3);
    const replays = [];
    for (const { id } of failed) replays.push(await store.replayMessage('big', id, newId()));
    await store.beginRun('big', replays[1].id);
    await store.saveProgress('big', replays[1].id, [], { status: 'succeeded', error: null });
    await store.saveProgress('big', replays[2].id, [], {
      status: 'failed',
      error: { kind: 'permanent', message: 'x' },
    });
    for (const days of [1, 7, 61]) {
      const since = new Date(Date.now() - days * DAY_MS);
      const backlog = await store.backlog('big', since.toISOString());
      const { rows: truth } = await admin.query(
        `select case when m.duplicate_of is not null then 'duplicate' when r.status = 'held' then 'blocked'
                  when r.status = 'queued' then 'accepted' when r.status in ('running', 'waiting') then 'running'
                  else r.status end as status, count(*)::int as n
           from ${schema}.messages m left join lateral (select status from ${schema}.runs where tenant_id = m.tenant_id
             and message_id = m.id order by id desc limit 1) r on true
          where m.tenant_id = 'big' and m.received_at >= $1 group by 1`,
        [backlog.since],
      );
      const counted = Object.fromEntries(Object.entries(backlog.messages).filter(([, n]) => n > 0));
      expect({ days, counted }).toEqual({ days, counted: Object.fromEntries(truth.map((r) => [r.status, r.n])) });
    }
  });

  it("gives each day's duration percentiles within 4.5 % of the runs' own", async () => {
    const stats = await store.statistics('big', {
      from: new Date(Date.now() - 10 * DAY_MS).toISOString(),
      to: new Date().toISOString(),
      interval: 'day',
      flowId: flows.big[2],
    });
    const { rows: truth } = await admin.query(
      `select date_trunc('day', created_at, 'UTC') as bucket,
              percentile_disc(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from finished_at -
                coalesce(started_at, created_at)) * 1000) as p
         from ${schema}.runs where tenant_id = 'big' and flow_id = $1 and finished_at is not null
          and created_at >= $2 group by 1`,
      [flows.big[2], stats.from],
    );
    expect(stats.runs.length).toBeGreaterThanOrEqual(10);
    const exact = new Map(truth.map((r) => [r.bucket.toISOString(), r.p as number[]]));
    for (const row of stats.runs) {
      const percentiles = exact.get(row.bucket)!;
      for (const [i, key] of (['p50', 'p95', 'p99'] as const).entries()) {
        expect(row.durationMs![key]).toBeGreaterThan(percentiles[i] * 0.955);
        expect(row.durationMs![key]).toBeLessThan(percentiles[i] * 1.045);
      }
    }
  });
});
