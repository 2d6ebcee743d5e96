import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../engine/model/ids.ts';
import type { Store } from '../engine/store/port.ts';
import type { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { MOVE_BATCH } from '../engine/store/sql/aggregates/outliving.ts';
import { oneTransform } from './support/flow-documents.ts';
import { schemaAtVersion, storeAdapters } from './support/stores.ts';

const DAY = 86_400_000;

/** An id made `daysAgo` days before `now` (UUIDv7: its first 48 bits are the time). */
const idMadeAgo = (now: number, daysAgo: number) =>
  (now - daysAgo * DAY)
    .toString(16)
    .padStart(12, '0')
    .replace(/^(.{8})(.{4})$/, '$1-$2') + newId().slice(13);

/** When a time-ordered id was made. */
const madeAt = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);

const adapters = storeAdapters('retention');

describe.each(adapters)('retention on %s', (_name, open) => {
  let store: Store;
  let cleanup: () => Promise<void>;
  const now = Date.now();
  const flows: Record<string, string> = {};

  /** A message of `tenant` received `daysAgo` days ago, its run left `status` (steps saved on the way). */
  const history = async (tenant: string, daysAgo: number, status: 'succeeded' | 'failed' | 'queued') => {
    const [accepted] = await store.acceptMessages([
      {
        message: {
          tenantId: tenant,
          id: idMadeAgo(now, daysAgo),
          flowId: flows[tenant],
          flowVersion: 1,
          deliveryId: `d-${newId()}`,
          topic: null,
          body: { daysAgo },
          headers: {},
          query: {},
        },
        runId: idMadeAgo(now, daysAgo),
      },
    ]);
    if (!accepted) throw new Error('the message was not recorded');
    const run = accepted.run;
    if (status === 'succeeded' || status === 'failed') {
      await store.beginRun(tenant, run.id);
      const at = new Date(now - daysAgo * DAY).toISOString();
      const step = { runId: run.id, key: 'a', nodeId: 'a', status: 'succeeded' as const, attempts: 1, output: 1 };
      await store.saveProgress(tenant, run.id, [{ ...step, error: null, startedAt: at, finishedAt: at }], {
        status,
        error: status === 'failed' ? { kind: 'permanent', message: 'no' } : null,
      });
    }
    return { messageId: accepted.messageId, runId: run.id };
  };
  const kept = async (tenant: string, row: { messageId: string; runId: string }) => ({
    message: (await store.getMessage(tenant, row.messageId, 0)) !== undefined,
    run: (await store.getRun(tenant, row.runId)) !== undefined,
  });

  beforeAll(async () => {
    ({ store, cleanup } = await open());
    await store.setRetentionPolicy({ days: 30, failedDays: 60, maxDays: 90 });
    for (const tenant of ['long', 'short']) {
      await store.createTenant({ id: tenant, name: tenant });
      const flow = await store.createFlow(tenant, { id: newId(), key: 'f', name: 'f', draft: oneTransform('f') });
      await store.publishFlow(tenant, flow.id, 1, oneTransform('f'));
      await store.setFlowActive(tenant, flow.id, true);
      flows[tenant] = flow.id;
    }
    await store.setTenantLimits('short', { retentionDays: 7 });
    await store.preparePartitions(now - 70 * DAY, now);
  });
  afterAll(() => cleanup());

  it('drops whole days past each tenant’s retention, keeping unfinished runs, failed ones longer, and replayed messages', async () => {
    const old = await history('long', 40, 'succeeded');
    const oldFailed = await history('long', 40, 'failed');
    // More runs to move out of the leaf than a batch ahead of the drop and one with it take.
    const manyFailed: Awaited<ReturnType<typeof history>>[] = [];
    while (manyFailed.length <= 2 * MOVE_BATCH)
      manyFailed.push(...(await Promise.all(Array.from({ length: 50 }, () => history('long', 39, 'failed')))));
    const oldQueued = await history('long', 40, 'queued');
    const recent = await history('long', 20, 'succeeded');
    const recentOfShort = await history('short', 20, 'succeeded');
    const freshOfShort = await history('short', 2, 'succeeded');
    const replayed = await history('long', 40, 'succeeded');
    const replay = await store.replayMessage('long', replayed.messageId, newId());
    await store.beginRun('long', replay.id);
    await store.saveProgress('long', replay.id, [], { status: 'succeeded', error: null });

    const report = await store.pruneExpired(now);
    expect(report.partitionsDropped).toBeGreaterThan(0);
    expect(report.rowsKept).toBeGreaterThan(0);
    expect(await kept('long', old)).toEqual({ message: false, run: false });
    expect(await kept('long', oldFailed)).toEqual({ message: true, run: true });
    const manyKept = await Promise.all(manyFailed.map((row) => kept('long', row)));
    expect(manyKept.filter((row) => !row.message || !row.run)).toEqual([]);
    expect(await kept('long', oldQueued)).toEqual({ message: true, run: true });
    expect(await kept('long', recent)).toEqual({ message: true, run: true });
    // The same day, another tenant: its 7 days apply to it alone.
    expect(await kept('short', recentOfShort)).toEqual({ message: false, run: false });
    expect(await kept('short', freshOfShort)).toEqual({ message: true, run: true });
    // A message run again today stays with its new run; its old run goes.
    expect(await kept('long', { messageId: replayed.messageId, runId: replay.id })).toEqual({
      message: true,
      run: true,
    });
    expect((await store.getRun('long', replayed.runId)) === undefined).toBe(true);
    expect((await store.getRun('long', oldFailed.runId))?.steps.map((s) => s.key)).toEqual(['a']);

    // A sweep again finds nothing more to drop.
    expect(await store.pruneExpired(now)).toMatchObject({ partitionsDropped: 0, rowsKept: 0 });

    // Later: failed runs go after their 60 days, the run still queued is kept, whatever its age.
    await store.preparePartitions(now, now + 70 * DAY);
    await store.pruneExpired(now + 62 * DAY);
    expect(await kept('long', oldFailed)).toEqual({ message: false, run: false });
    expect(await kept('long', oldQueued)).toEqual({ message: true, run: true });
    expect(await kept('long', { messageId: replayed.messageId, runId: replay.id })).toEqual({
      message: false,
      run: false,
    });
  });
});

describe('retention of a store written before partitioning, on PostgreSQL', () => {
  const now = Date.now();
  let drop: () => Promise<void>;
  let driver: PgDriver;
  let store: Store;

  beforeAll(async () => {
    ({ driver, drop } = await schemaAtVersion('retention_upgrade', 19));
  });
  afterAll(async () => {
    await store?.close();
    await drop();
  });

  it('keeps the old rows readable after the upgrade, and deletes those past retention row by row', async () => {
    const flowId = newId();
    const rows = { old: idMadeAgo(now, 40), oldQueued: idMadeAgo(now, 40), recent: idMadeAgo(now, 2) };
    await driver.query("insert into tenants (id, name) values ('t', 't')");
    for (const [name, id] of Object.entries(rows)) {
      await driver.query(
        `insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, body, headers, query)
         values ('t', $1, $2, 1, $3, '{}', '{}', '{}')`,
        [id, flowId, `d-${name}`],
      );
      await driver.query(
        `insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, finished_at)
         values ('t', $1, $2, 1, $1, $3, $4)`,
        [id, flowId, name === 'oldQueued' ? 'queued' : 'succeeded', new Date(madeAt(id))],
      );
      await driver.query(
        `insert into steps (tenant_id, run_id, key, node_id, status, attempts, started_at)
         values ('t', $1, 'a', 'a', 'succeeded', 1, now())`,
        [id],
      );
    }

    store = await SqlStore.open(driver);
    for (const id of Object.values(rows)) expect((await store.getRun('t', id))?.steps).toHaveLength(1);
    // A repeated delivery of the last week is still recognised.
    const [again] = await store.acceptMessages([
      {
        message: {
          tenantId: 't',
          id: newId(),
          flowId,
          flowVersion: 1,
          deliveryId: 'd-recent',
          topic: null,
          body: {},
          headers: {},
          query: {},
        },
        runId: newId(),
      },
    ]);
    expect(again).toMatchObject({ duplicate: true, messageId: rows.recent });

    const report = await store.pruneExpired(now);
    expect(report.rowsDeleted).toBe(3); // the old run, its step and its message
    expect(await store.getRun('t', rows.old)).toBeUndefined();
    expect(await store.getMessage('t', rows.old, 0)).toBeUndefined();
    expect(await store.getRun('t', rows.oldQueued)).toBeDefined();
    expect(await store.getRun('t', rows.recent)).toBeDefined();
  });
});
