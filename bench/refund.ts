/**
 * (c) the refund operation against the simulated shop and ERP: the GraphQL cost of a typical refund
 * (from its webhook, and exported after the import's poll found its order) beside the least any
 * queries for the same data could request, the refunds per second a 100 points/s shop allows beside
 * what the engine achieves against a shop throttled that way, and webhook-to-ERP latency with an
 * unthrottled shop.
 */
import { eventually, startTestPlatform, type ApiClient, type TestPlatform } from '../test/support/harness.ts';
import { importFlowDocument, refundFlow, refundWorld } from '../test/support/refund-fixture.ts';
import type { QueryRecord, ShopifySimulatorOptions } from '../test/support/shopify-simulator.ts';

const THROTTLED_REFUNDS = Number(process.env.BENCH_REFUNDS ?? 30);
const LATENCY_REFUNDS = 200;
const RESTORE_RATE = 100;

type World = Awaited<ReturnType<typeof refundWorld>>;

/** A typical refund: an order of two lines and shipping; one line refunded, with its money. */
function typicalRefund(world: World) {
  const order = world.shopify.shop.createOrder({
    lines: [
      { title: 'Linen shirt', price: 49, quantity: 1 },
      { title: 'Canvas tote', price: 25, quantity: 2 },
    ],
    shipping: 6,
    synced: true,
  });
  return world.shopify.shop.createRefund(order.id, { lines: [{ line: 1, quantity: 1 }] });
}

async function tenantWorld(
  env: TestPlatform,
  id: string,
  shop: ShopifySimulatorOptions,
): Promise<{ tenant: ApiClient; world: World }> {
  const tenant = await env.tenant(id);
  const world = await refundWorld(tenant, { shop });
  await tenant.publish(refundFlow('refunds'));
  return { tenant, world };
}

/** What queries requested, beside the least that queries for the same data could (the simulator's `minimumQueryCost`). */
function costOf(queries: QueryRecord[]) {
  const answered = queries.filter((query) => !query.throttled);
  const sum = (figure: (query: QueryRecord) => number | null) =>
    answered.reduce((total, query) => total + (figure(query) ?? 0), 0);
  const requested = sum((query) => query.requestedQueryCost);
  const least = sum((query) => query.minimumQueryCost);
  return {
    queries: answered.map((query) => query.operationName).join(' '),
    requested,
    actual: sum((query) => query.actualQueryCost),
    least,
    ratio: +(requested / least).toFixed(2),
  };
}

/**
 * A poll of Orders > Import List that finds three changed orders, one with a typical refund whose webhook never
 * came; the refund export sends it. The poll's queries and the export's, apart.
 */
async function exportCost(env: TestPlatform) {
  const tenant = await env.tenant('export-cost');
  const world = await refundWorld(tenant, { shop: { restoreRate: 1_000_000, maximumAvailable: 1_000_000 } });
  try {
    const { refund } = typicalRefund(world);
    for (let i = 0; i < 2; i++)
      world.shopify.shop.createOrder({ lines: [{ title: 'Mug', price: 12, quantity: 1 }], synced: true });
    const flowId = await tenant.publish({ ...importFlowDocument(), key: 'import' });
    await eventually(async () => {
      if (!world.erp.requests.some((request) => request.body.includes(refund.id))) throw new Error('not exported yet');
    });
    await tenant.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    const { queries } = world.shopify;
    const poll = ['CountOrders', 'ImportOrders'].flatMap((name) => {
      const first = queries.find((query) => query.operationName === name && !query.throttled);
      return first ? [first] : [];
    });
    const exported = queries.filter((query) => !['CountOrders', 'ImportOrders'].includes(query.operationName ?? ''));
    return { poll: costOf(poll), export: costOf(exported) };
  } finally {
    await world.close();
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

export async function measureRefunds(results: Record<string, unknown>) {
  const env = await startTestPlatform('postgres', { api: true, worker: true }, { logLevel: 'warn' });
  try {
    // Cost of one typical refund, every query it sends.
    const single = await tenantWorld(env, 'cost', {});
    const { webhookBody } = typicalRefund(single.world);
    const accepted = await single.world.deliver(env.url, 'refunds', webhookBody);
    await single.tenant.settledRun(accepted.body.runId);
    const typical = costOf(single.world.shopify.queries);
    await single.world.close();
    const exported = await exportCost(env);

    // Throughput against a shop that restores 100 points/s, starting from an empty bucket.
    const throttled = await tenantWorld(env, 'throttled', { restoreRate: RESTORE_RATE, maximumAvailable: 2000 });
    const bodies = Array.from({ length: THROTTLED_REFUNDS }, () => typicalRefund(throttled.world).webhookBody);
    throttled.world.shopify.drainBucket();
    const started = performance.now();
    const runIds = await Promise.all(
      bodies.map(async (body) => (await throttled.world.deliver(env.url, 'refunds', body)).body.runId as string),
    );
    const runs = await Promise.all(runIds.map((runId) => throttled.tenant.settledRun(runId)));
    const seconds = (performance.now() - started) / 1000;
    const failed = runs.filter((run) => run.status !== 'succeeded').length;
    const throttledAnswers = throttled.world.shopify.queries.filter((query) => query.throttled).length;
    await throttled.world.close();

    // Latency, webhook sent -> ERP received, one refund at a time, nothing throttled.
    const open = await tenantWorld(env, 'latency', { restoreRate: 1_000_000, maximumAvailable: 1_000_000 });
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_REFUNDS; i++) {
      const { refund, webhookBody: body } = typicalRefund(open.world);
      const sent = Date.now();
      const answer = await open.world.deliver(env.url, 'refunds', body);
      await open.tenant.settledRun(answer.body.runId);
      const received = open.world.erp.requests.find((request) => request.body.includes(refund.id));
      if (received) latencies.push(received.receivedAt - sent);
    }
    await open.world.close();
    latencies.sort((a, b) => a - b);

    results.refund = {
      typicalRefund: typical,
      exportedRefund: exported,
      shopRestoreRate: RESTORE_RATE,
      refundsPerSecondAllowed: +(RESTORE_RATE / typical.actual).toFixed(2),
      engineAgainstThrottledShop: {
        refunds: THROTTLED_REFUNDS,
        seconds: +seconds.toFixed(1),
        refundsPerSecond: +(THROTTLED_REFUNDS / seconds).toFixed(2),
        failed,
        throttledAnswers,
      },
      webhookToErp: { refunds: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) },
    };
  } finally {
    await env.close();
  }
}
