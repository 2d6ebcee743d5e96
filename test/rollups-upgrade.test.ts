import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../engine/store/port.ts';
import type { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { historyTenant } from './support/history.ts';
import { schemaAtVersion } from './support/stores.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Rollups written before migration 22 (hourly counts, a row per histogram bucket) read the same after it, by the
 * hour and by the day, and what finishes after it adds to both.
 */
describe('rollups of a store written before daily rollups, on PostgreSQL', () => {
  const day = Math.floor((Date.now() - 2 * DAY) / DAY) * DAY;
  const hours = [new Date(day + 3 * HOUR), new Date(day + 7 * HOUR)];
  const flowId = '01900000-0000-7000-8000-000000000001';
  let drop: () => Promise<void>;
  let driver: PgDriver;
  let store: Store;

  beforeAll(async () => {
    ({ driver, drop } = await schemaAtVersion('rollups_upgrade', 21));
    await driver.query("insert into tenants (id, name) values ('t', 't')");
    // Three runs in the first hour (duration bucket 40), one failed run in the second (bucket 60), as migration 19's
    // triggers wrote them; latencies alike. Five messages, one a repeated delivery.
    for (const [hour, status, runs, bucket] of [
      [hours[0], 'succeeded', 3, 40],
      [hours[1], 'failed', 1, 60],
    ] as const) {
      await driver.query(
        'insert into run_counts (tenant_id, hour, flow_id, status, runs) values ($1, $2, $3, $4, $5)',
        ['t', hour, flowId, status, runs],
      );
      for (const span of ['h', 'd'])
        for (const measure of ['d', 'l'])
          await driver.query(
            `insert into run_timings (tenant_id, span, period, flow_id, measure, bucket, runs)
             values ('t', $1, date_trunc($7, $2::timestamptz, 'UTC'), $3, $4, $5, $6)
             on conflict (tenant_id, span, period, flow_id, measure, bucket) do update
               set runs = run_timings.runs + excluded.runs`,
            [span, hour, flowId, measure, bucket, runs, span === 'h' ? 'hour' : 'day'],
          );
      await driver.query(
        `insert into message_counts (tenant_id, hour, flow_id, topic, messages, duplicates)
         values ('t', $1, $2, 'orders/create', $3, $4)`,
        [hour, flowId, runs, runs === 1 ? 1 : 0],
      );
    }
    store = await SqlStore.open(driver);
  });
  afterAll(async () => {
    await store?.close();
    await drop();
  });

  const statistics = (interval: 'hour' | 'day', from: number, to: number) =>
    store.statistics('t', { from: new Date(from).toISOString(), to: new Date(to).toISOString(), interval });

  it('reads the hours as they were, and their day as their sum, percentiles from the merged histogram', async () => {
    const byHour = await statistics('hour', day, day + DAY);
    expect(byHour.runs.map((row) => [row.bucket, row.counts, row.total])).toEqual([
      [hours[0].toISOString(), { succeeded: 3 }, 3],
      [hours[1].toISOString(), { failed: 1 }, 1],
    ]);
    const [first, second] = byHour.runs;
    const byDay = await statistics('day', day, day + DAY);
    expect(byDay.runs).toEqual([
      {
        bucket: new Date(day).toISOString(),
        flowId,
        total: 4,
        counts: { succeeded: 3, failed: 1 },
        // Three of four runs in the first hour's bucket: the median is theirs, the 99th the second hour's.
        durationMs: { p50: first.durationMs!.p50, p95: second.durationMs!.p95, p99: second.durationMs!.p99 },
        latencyMs: { p50: first.latencyMs!.p50, p95: second.latencyMs!.p95, p99: second.latencyMs!.p99 },
      },
    ]);
    expect(first.durationMs!.p50).toBeLessThan(second.durationMs!.p50);
    expect(byDay.messages).toEqual([
      { bucket: new Date(day).toISOString(), topic: 'orders/create', count: 4, duplicates: 1 },
    ]);
  });

  it('counts a run that finishes after the upgrade in its hour and its day', async () => {
    const [tenantFlow] = await historyTenant(store, 'u');
    const now = Date.now();
    for (const interval of ['hour', 'day'] as const) {
      const stats = await store.statistics('u', {
        from: new Date(now - DAY).toISOString(),
        to: new Date(now + HOUR).toISOString(),
        interval,
      });
      expect({ interval, runs: stats.runs.map((row) => [row.flowId, row.counts]) }).toEqual({
        interval,
        runs: [[tenantFlow, { succeeded: 1 }]],
      });
      expect(stats.runs[0].durationMs).not.toBeNull();
      expect(stats.messages.map((row) => row.count)).toEqual([1]);
    }
  });
});
