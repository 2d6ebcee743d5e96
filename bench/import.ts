/**
 * (d) Orders > Import List against the simulated shop: orders imported per second unthrottled and on
 * a 100 points/s shop (beside the bound the per-order query cost implies), and the peak RSS of the
 * worker process importing 10,000 orders against 1,000 (it must stay flat: one page in memory).
 */
import { readFileSync } from 'node:fs';
import { orderCost } from '../operations/shopify/order-record.ts';
import { eventually, spawnWorker, startTestPlatform, type TestPlatform } from '../test/support/harness.ts';
import { importFlowDocument, refundWorld } from '../test/support/refund-fixture.ts';
import type { ShopifySimulatorOptions } from '../test/support/shopify-simulator.ts';

const RESTORE_RATE = 100;

/** Peak resident set of a process, in MB (Linux). */
const peakRssMb = (pid: number) =>
  Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

async function importOrders(
  env: TestPlatform,
  tenantId: string,
  count: number,
  shop: ShopifySimulatorOptions,
  drain: boolean,
) {
  const tenant = await env.tenant(tenantId);
  const world = await refundWorld(tenant, { shop });
  // A worker process of its own, so its memory is the import's.
  const worker = spawnWorker(env.config);
  try {
    await worker.ready;
    for (let i = 0; i < count; i++)
      world.shopify.shop.createOrder({ lines: [{ title: `Item ${i}`, price: 10, quantity: 1 }], synced: true });
    if (drain) world.shopify.drainBucket();
    const flowId = await tenant.publish({
      ...importFlowDocument({ pageSize: 250, maxPendingTasks: 1000 }),
      key: 'import',
    });
    const batch = await eventually(async () => {
      const [oldest] = (await tenant.call('GET', `/api/v1/batches?flowId=${flowId}`)).body.nodes.slice(-1);
      if (oldest?.status !== 'succeeded') throw new Error(`batch is ${oldest?.status}`);
      return oldest;
    }, 30 * 60_000);
    await tenant.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    const seconds = (Date.parse(batch.finishedAt) - Date.parse(batch.startedAt)) / 1000;
    return {
      orders: batch.counts.total,
      seconds: +seconds.toFixed(1),
      ordersPerSecond: +(batch.counts.total / seconds).toFixed(1),
      workerPeakRssMb: peakRssMb(worker.child.pid!),
    };
  } finally {
    worker.child.kill('SIGKILL');
    await world.close();
  }
}

export async function measureImport(results: Record<string, unknown>) {
  const env = await startTestPlatform('postgres', { api: true, worker: false }, { logLevel: 'warn' });
  const open = { restoreRate: 1_000_000, maximumAvailable: 1_000_000 };
  try {
    const small = await importOrders(env, 'import-1k', 1000, open, false);
    const large = await importOrders(env, 'import-10k', 10_000, open, false);
    const throttled = await importOrders(
      env,
      'import-throttled',
      300,
      { restoreRate: RESTORE_RATE, maximumAvailable: 2000 },
      true,
    );
    results.import = {
      unthrottled1k: small,
      unthrottled10k: large,
      shopRestoreRate: RESTORE_RATE,
      throttled: { ...throttled, boundOrdersPerSecond: +(RESTORE_RATE / orderCost()).toFixed(1) },
    };
  } finally {
    await env.close();
  }
}
