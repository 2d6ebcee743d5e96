import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, sendWebhook, spawnWorker, startTestPlatform, type TestPlatform } from './support/harness.ts';
import { refundFlow, refundWorld, SHOP_TOKEN } from './support/refund-fixture.ts';
import { type QueryRecord, ShopifySimulator } from './support/shopify-simulator.ts';
import { restCallLimit } from '../operations/shopify/rest-call-limit.ts';

// A shop's cost points are one budget for every flow and worker process that queries it: the refund sync's webhooks
// and the import's poll, run by two workers, queue for points instead of throttling each other.
const RESTORE_RATE = 100;
const BUCKET = 1000;

let env: TestPlatform;
let acme: ApiClient;
let world: Awaited<ReturnType<typeof refundWorld>>;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  env = await startTestPlatform('postgres', { api: true, worker: false });
  acme = await env.tenant('acme');
  world = await refundWorld(acme, { shop: { restoreRate: RESTORE_RATE, maximumAvailable: BUCKET } });
  for (const _ of [1, 2]) {
    const { child, ready } = spawnWorker(env.config);
    workers.push(child);
    await ready;
  }
});
afterAll(async () => {
  for (const worker of workers) {
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
  await world?.close();
  await env?.close();
});

const shop = () => world.shopify.shop;

/** Orders synced to the ERP, with a refund each. */
function refundedOrders(n: number) {
  return Array.from({ length: n }, (_, i) => {
    const order = shop().createOrder({ lines: [{ title: `Item ${i}`, price: 10, quantity: 2 }], synced: true });
    return { orderId: order.id as string, ...shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] }) };
  });
}

const EXPORT_FLOW = {
  key: 'order-refunds',
  name: 'order refunds (the import task)',
  trigger: { type: 'webhook' },
  nodes: [
    {
      id: 'export',
      operation: 'shopify.refund-export',
      config: { destination: 'shop' },
      retry: { maxAttempts: 4, backoffMs: 100 },
    },
  ],
  edges: [{ from: 'trigger', to: 'export' }],
};

/** The import's task for each order: every refund of it not exported yet goes to the ERP. */
async function exportAll(orderIds: string[]) {
  const runs = await Promise.all(orderIds.map((id) => sendWebhook(env.url, 'acme', EXPORT_FLOW.key, { Id: id })));
  for (const { status, body } of runs) {
    expect(status).toBe(202);
    expect(['succeeded', 'skipped']).toContain((await acme.settledRun(body.runId)).status);
  }
}

async function syncAll(refunds: Array<{ webhookBody: string }>) {
  const runs = await Promise.all(refunds.map(({ webhookBody }) => world.deliver(env.url, 'refunds', webhookBody)));
  for (const { status, body } of runs) {
    expect(status).toBe(202);
    // Skipped: the other flow sent the refund first.
    expect(['succeeded', 'skipped']).toContain((await acme.settledRun(body.runId)).status);
  }
}

describe("a shop's cost points, shared by two workers' runs of the refund sync and the import", () => {
  it("throttle nothing once the budget knows the shop's bucket and rate, and keep the shop busy", async () => {
    await acme.publish(refundFlow('refunds'));
    await acme.publish(EXPORT_FLOW);
    // Learning the shop's bucket and rate from its answers, at a pace the bucket holds.
    const [learnt] = refundedOrders(1);
    await syncAll([learnt]);
    await exportAll([learnt.orderId]);

    // Well beyond the bucket: 16 refunds, 8 of them by webhook and all 16 orders exported, at once.
    const queriesBefore = world.shopify.queries.length;
    const requestsBefore = world.erp.requests.length;
    const refunds = refundedOrders(16);
    const atStart = world.shopify.available();
    const startedAt = Date.now();
    await Promise.all([syncAll(refunds.slice(0, 8)), exportAll(refunds.map(({ orderId }) => orderId))]);

    // Each refund reached the ERP, under one idempotency key (both flows may send it at the same moment, the ERP
    // upserting by that key: decision 10).
    const accepted = world.erp.requests
      .slice(requestsBefore)
      .filter((request) => request.reply?.status === 200)
      .map((request) => ({ id: JSON.parse(request.body).Refund.Id, key: request.headers['idempotency-key'] }));
    expect([...new Set(accepted.map(({ id }) => id))].sort()).toEqual(refunds.map(({ refund }) => refund.id).sort());
    for (const { id, key } of accepted) expect(key).toBe(id);
    const queries = world.shopify.queries.slice(queriesBefore);
    expect(queries.filter((query) => query.throttled)).toEqual([]);
    // What the shop allows: it admits a query only once its bucket holds the query's requested cost, so none could
    // have been admitted before the points it asked for, beyond those in the bucket at the start, were restored
    // (less the actual cost of those answered by then). The restore rate alone would allow the points spent.
    const seconds = (queries.at(-1)!.answeredAt - startedAt) / 1000;
    // A query answered within the millisecond it was admitted is not among those answered before it.
    const spentBefore = (admitted: QueryRecord) =>
      queries.reduce(
        (sum, query) =>
          sum + (query !== admitted && query.answeredAt <= admitted.admittedAt! ? (query.actualQueryCost ?? 0) : 0),
        0,
      );
    const bound = Math.max(
      ...queries.map((query) => (query.requestedQueryCost + spentBefore(query) - atStart) / RESTORE_RATE),
    );
    const spent = queries.reduce((sum, query) => sum + (query.actualQueryCost ?? 0), 0);
    console.log(
      `shop budget: ${queries.length} queries, ${spent} points (${Math.round(atStart)} in the bucket at the start) ` +
        `in ${seconds.toFixed(1)} s, ${(seconds / bound).toFixed(2)}x the ${bound.toFixed(1)} s the shop's ` +
        `admission allows (${(Math.max(0, spent - atStart) / RESTORE_RATE).toFixed(1)} s at its restore rate alone)`,
    );
  });
});

describe("a shop's REST call limit, in one process", () => {
  let rest: TestPlatform;
  let tenant: ApiClient;
  let shopify: ShopifySimulator;

  beforeAll(async () => {
    shopify = await new ShopifySimulator({ accessToken: SHOP_TOKEN }).start();
    rest = await startTestPlatform('postgres');
    tenant = await rest.tenant('acme');
  });
  afterAll(async () => {
    await shopify?.close();
    await rest?.close();
  });

  it("keeps an http.request node's REST calls within the shop's call limit, which its answers report", async () => {
    // Shopify's REST Admin API has a bucket of calls of its own (40, leaking 2 a second), apart from the GraphQL
    // points, and says how full it is in every answer (X-Shopify-Shop-Api-Call-Limit).
    await tenant.publish({
      key: 'shop-details',
      name: 'shop details (REST)',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'shop',
          operation: 'http.request',
          config: {
            method: 'GET',
            url: new URL('admin/api/2025-10/shop.json', shopify.url).toString(),
            headers: { 'X-Shopify-Access-Token': SHOP_TOKEN },
          },
          retry: { maxAttempts: 5, backoffMs: 100 },
        },
      ],
      edges: [{ from: 'trigger', to: 'shop' }],
    });
    const runs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => sendWebhook(rest.url, 'acme', 'shop-details', { call: i })),
    );
    for (const { status, body } of runs) {
      expect(status).toBe(202);
      expect((await tenant.settledRun(body.runId)).status).toBe('succeeded');
    }
    // Fifty calls where the bucket holds forty: the last ten waited for it to leak, none was refused.
    const calls = shopify.restCalls;
    expect(calls.map((call) => call.status)).toEqual(Array.from({ length: 50 }, () => 200));
  });

  it('reads only a call limit a shop could send: any server may send the header', () => {
    const answer = (limit: string) => ({
      status: 200,
      ok: true,
      headers: { 'x-shopify-shop-api-call-limit': limit },
      body: Buffer.alloc(0),
    });
    expect(restCallLimit(answer('32/40'))).toEqual({ available: 8, maximum: 40, restoreRate: 2, cost: 1 });
    for (const limit of [`${'9'.repeat(400)}/40`, `1/${'9'.repeat(400)}`, '0/0', '-1/40', '1/40\u0000', 'x/40'])
      expect(restCallLimit(answer(limit))).toBeUndefined();
  });
});
