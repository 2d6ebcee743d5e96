import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { erpReplies } from './support/erp-simulator.ts';
import { shopifyTime } from './support/shopify-simulator.ts';
import { eventually, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { ERP_CREDENTIALS, importFlowDocument, refundFlow, refundWorld } from './support/refund-fixture.ts';

let env: TestPlatform;
let acme: ApiClient;
let world: Awaited<ReturnType<typeof refundWorld>>;

beforeAll(async () => {
  env = await startTestPlatform('postgres');
  acme = await env.tenant('acme');
  // A Shopify Plus-sized bucket (1000 points/s) keeps the suite quick; the 600-order import starts it empty.
  world = await refundWorld(acme, { shop: { restoreRate: 1000, maximumAvailable: 10_000 } });
});
afterAll(async () => {
  await world?.close();
  await env?.close();
});

const shop = () => world.shopify.shop;

const importFlow = (key: string, importConfig: Record<string, unknown> = {}) => ({
  ...importFlowDocument(importConfig),
  key,
});

const batchesOf = async (flowId: string) =>
  (await acme.call('GET', `/api/v1/batches?flowId=${flowId}`)).body.nodes as any[];
/** Waits for the flow's first batch to finish, then stops the schedule; returns that batch. */
async function firstBatch(flowId: string) {
  const batch = await eventually(async () => {
    const [oldest] = (await batchesOf(flowId)).slice(-1);
    expect(['succeeded', 'failed']).toContain(oldest?.status);
    return oldest;
  }, 120_000);
  await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
  return batch;
}
async function allTasks(batchId: string) {
  const tasks: any[] = [];
  let after: string | undefined;
  do {
    const page = (await acme.call('GET', `/api/v1/batches/${batchId}/tasks?first=200${after ? `&after=${after}` : ''}`))
      .body;
    tasks.push(...page.nodes);
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : undefined;
  } while (after);
  return tasks;
}
const exportedTags = (orderId: string) =>
  shop()
    .orders.get(orderId)!
    .tags.filter((tag: string) => tag.startsWith('IPaaS Refunds Exported'));

describe('Orders > Import List', () => {
  it('imports 600 orders across pages, once each, and exports the refunds whose webhooks never came', async () => {
    const orders = Array.from({ length: 600 }, (_, i) =>
      shop().createOrder({ lines: [{ title: `Item ${i}`, price: 10, quantity: 1 }], synced: true }),
    );
    // Every 20th order has a refund, its webhook lost.
    const refunded = orders
      .filter((_, i) => i % 20 === 0)
      .map((order) => ({ order, refund: shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] }).refund }));
    const receiptsBefore = world.erp.receipts().length;
    // The import (about 8,400 points) and the exports wait for points along the way; nothing fails for it.
    world.shopify.drainBucket();
    const flowId = await acme.publish(importFlow('import-600', { pageSize: 250 }));
    const batch = await firstBatch(flowId);

    expect(batch).toMatchObject({
      status: 'succeeded',
      counts: { total: 600, unfinished: 0, failed: 0, progress: 100 },
    });
    expect(batch.counts.succeeded).toBe(refunded.length);
    expect(batch.counts.skipped).toBe(600 - refunded.length);
    const tasks = await allTasks(batch.id);
    expect(new Set(tasks.map((task) => task.key)).size).toBe(600);
    const receipts = world.erp.receipts().slice(receiptsBefore) as any[];
    expect(receipts.map((record) => record.Refund.Id).sort()).toEqual(refunded.map(({ refund }) => refund.id).sort());
    for (const { order } of refunded) expect(exportedTags(order.id)).toEqual(['IPaaS Refunds Exported: 1']);

    // Pages were sized to Shopify's 1000-point limit (71 of the standard record) and cost what the operation
    // expects; the last asked for the orders the window was counted to hold beyond them, no more.
    const pages = world.shopify.queries.filter((query) => query.operationName === 'ImportOrders' && !query.throttled);
    expect(pages.slice(0, -1).every((query) => query.requestedQueryCost === 2 + 71 * 14)).toBe(true);
    expect(pages.at(-1)!.requestedQueryCost).toBe(2 + (600 - 71 * (pages.length - 1)) * 14);
    expect(pages.length).toBe(Math.ceil(600 / 71));

    const field = (await acme.call('GET', `/api/v1/ingress-incremental-fields/${flowId}`)).body;
    expect(field).toMatchObject({ flowId, field: 'updated_at', value: batch.windowTo, overlapMs: 300_000 });
  });

  it('reads orders that share one updated_at across a page boundary exactly once', async () => {
    const at = new Date(Date.now() - 60_000).toISOString();
    const tied = Array.from({ length: 7 }, () =>
      shop().createOrder({ lines: [{ title: 'Tie', price: 5, quantity: 1 }], synced: true }),
    );
    for (const order of tied) shop().setUpdatedAt(order.id, at);
    const flowId = await acme.publish(importFlow('ties', { pageSize: 3, query: 'tag:none-but-ties' }));
    for (const order of tied) order.tags.push('none-but-ties');
    const batch = await firstBatch(flowId);
    expect(batch.counts.total).toBe(7);
    expect((await allTasks(batch.id)).map((task) => task.key).sort()).toEqual(tied.map((order) => order.id).sort());
  });

  it('an order changed while the poll runs is imported once in it, and again by the next poll', async () => {
    const orders = Array.from({ length: 6 }, () =>
      shop().createOrder({ lines: [{ title: 'Moving', price: 3, quantity: 1 }], synced: true, tags: ['moving'] }),
    );
    let pages = 0;
    world.shopify.beforeExecute = (_fields, operationName) => {
      // Between the first and the second page, the first order changes.
      // Shopify's clock has whole seconds: the change usually falls in the second the poll started in.
      if (operationName === 'ImportOrders' && ++pages === 2) shop().setUpdatedAt(orders[0].id, shopifyTime());
    };
    const flowId = await acme.publish(importFlow('moving', { pageSize: 2, query: 'tag:moving' }));
    const first = await eventually(async () => {
      const [oldest] = (await batchesOf(flowId)).slice(-1);
      expect(oldest?.status).toBe('succeeded');
      return oldest;
    });
    world.shopify.beforeExecute = undefined;
    expect((await allTasks(first.id)).map((task) => task.key).sort()).toEqual(orders.map((order) => order.id).sort());
    // The next poll re-reads from the field minus the overlap: the changed order comes again, with its new updatedAt.
    const next = await eventually(async () => {
      const [newest] = await batchesOf(flowId);
      expect(newest.id).not.toBe(first.id);
      expect(newest.status).toBe('succeeded');
      return newest;
    });
    await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    const keys = (await allTasks(next.id)).map((task) => task.key);
    expect(keys).toContain(orders[0].id);
  });

  it('the webhook flow and the poll on one shop send each refund once', async () => {
    await acme.publish(refundFlow('refunds'));
    const order = shop().createOrder({
      lines: [{ title: 'Both', price: 30, quantity: 2 }],
      synced: true,
      tags: ['both-ways'],
    });
    const { refund, webhookBody } = shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] });
    const receiptsBefore = world.erp.receipts().length;
    const flowId = await acme.publish(importFlow('both', { query: 'tag:both-ways' }));
    const delivered = await world.deliver(env.url, 'refunds', webhookBody);
    const webhookRun = await acme.settledRun(delivered.body.runId);
    const batch = await firstBatch(flowId);
    expect(['succeeded', 'skipped']).toContain(webhookRun.status);
    expect(batch.status).toBe('succeeded');
    const receipts = (world.erp.receipts().slice(receiptsBefore) as any[]).filter(
      (record) => record.Refund.Id === refund.id,
    );
    expect(receipts).toHaveLength(1);
    expect(exportedTags(order.id)).toEqual(['IPaaS Refunds Exported: 1']);
  });

  it("retries a batch's failed tasks from the API, and backfills after a rewind without sending twice", async () => {
    const order = shop().createOrder({
      lines: [{ title: 'Retry', price: 12, quantity: 1 }],
      synced: true,
      tags: ['retry-me'],
    });
    const { refund } = shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] });
    world.erp.script(erpReplies.invalidField);
    const flowId = await acme.publish(importFlow('retry', { query: 'tag:retry-me' }));
    const batch = await firstBatch(flowId);
    expect(batch).toMatchObject({ status: 'failed', counts: { total: 1, failed: 1 } });
    const [task] = await allTasks(batch.id);
    expect(task).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('INVALID_FLD_VALUE') },
      retries: 0,
    });
    // The field moved on anyway: a failed task is settled and recorded.
    expect((await acme.call('GET', `/api/v1/ingress-incremental-fields/${flowId}`)).body.value).toBe(batch.windowTo);

    const retried = await acme.call('POST', `/api/v1/batches/${batch.id}/retry`);
    expect(retried.body).toEqual({ retried: 1, runIds: [expect.any(String)], more: false });
    expect((await acme.settledRun(retried.body.runIds[0])).status).toBe('succeeded');
    expect(await allTasks(batch.id)).toEqual([
      expect.objectContaining({ status: 'succeeded', retries: 1, runId: retried.body.runIds[0] }),
    ]);
    expect((await acme.call('GET', `/api/v1/batches/${batch.id}`)).body.counts).toMatchObject({
      failed: 0,
      succeeded: 1,
    });
    expect((world.erp.receipts() as any[]).filter((record) => record.Refund.Id === refund.id)).toHaveLength(1);

    // Rewind an hour and poll again: the order is read again, its refund is not sent again.
    const rewound = await acme.call('PUT', `/api/v1/ingress-incremental-fields/${flowId}`, {
      value: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(rewound.status).toBe(200);
    await acme.call('POST', `/api/v1/flows/${flowId}/activate`);
    const backfill = await eventually(async () => {
      const [newest] = await batchesOf(flowId);
      expect(newest.id).not.toBe(batch.id);
      expect(newest.status).toBe('succeeded');
      return newest;
    }, 60_000);
    await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    expect(backfill.counts).toMatchObject({ total: 1, skipped: 1 });
    expect((world.erp.receipts() as any[]).filter((record) => record.Refund.Id === refund.id)).toHaveLength(1);
  });

  it("replays a batch's failed tasks as one tracked bulk replay, each once, linked to the run it retries", async () => {
    const orders = Array.from({ length: 3 }, (_, i) =>
      shop().createOrder({
        lines: [{ title: `Bulk ${i}`, price: 5, quantity: 1 }],
        synced: true,
        tags: ['bulk-retry'],
      }),
    );
    const refunds = orders.map((order) => shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] }).refund);
    world.erp.script(erpReplies.invalidField, erpReplies.invalidField, erpReplies.invalidField);
    const flowId = await acme.publish(importFlow('bulk-retry', { query: 'tag:bulk-retry' }));
    const batch = await firstBatch(flowId);
    expect(batch.counts).toMatchObject({ total: 3, failed: 3 });
    const failedRuns = (await allTasks(batch.id)).map((task) => task.runId);

    const REPLAYS = '/api/v1/message-queue/replays';
    const mixed = await acme.call('POST', REPLAYS, { filter: { batchId: batch.id, flowId }, dryRun: true });
    expect(mixed.status).toBe(400);
    expect(mixed.body.errors).toEqual([{ path: '$.body.filter.flowId', message: 'does not go with batchId' }]);
    const counted = await acme.call('POST', REPLAYS, {
      filter: { batchId: batch.id, errorKind: 'permanent' },
      dryRun: true,
    });
    expect(counted.body).toEqual({ dryRun: true, count: 3, exact: true });
    const made = await acme.call('POST', REPLAYS, { filter: { batchId: batch.id }, ratePerSecond: 2 });
    expect(made.status).toBe(202);
    expect(made.body).toMatchObject({ total: 3, status: 'running' });
    const done = await eventually(async () => {
      const replay = (await acme.call('GET', `${REPLAYS}/${made.body.id}`)).body;
      expect(replay.status).toBe('finished');
      return replay;
    });
    expect(done).toMatchObject({ replayed: 3, skipped: 0 });
    const tasks = await eventually(async () => {
      const all = await allTasks(batch.id);
      expect(all.map((task) => task.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      return all;
    });
    expect(tasks.map((task) => task.retries)).toEqual([1, 1, 1]);
    const retriedRuns = await Promise.all(tasks.map((task) => acme.settledRun(task.runId)));
    expect(retriedRuns.map((run) => run.replayOf).sort()).toEqual([...failedRuns].sort());
    expect((await acme.call('GET', `/api/v1/batches/${batch.id}`)).body).toMatchObject({
      status: 'succeeded',
      counts: { failed: 0, succeeded: 3 },
    });
    for (const refund of refunds)
      expect((world.erp.receipts() as any[]).filter((record) => record.Refund.Id === refund.id)).toHaveLength(1);
    // Nothing failed is left: asking again replays nothing.
    expect((await acme.call('POST', REPLAYS, { filter: { batchId: batch.id } })).body).toMatchObject({ total: 0 });
  });

  it('imports the optional fields it is asked for, pages sized to their cost', async () => {
    const order = shop().createOrder({
      lines: Array.from({ length: 12 }, (_, i) => ({ title: `Part ${i}`, price: 2, quantity: 1 })),
      synced: true,
      tags: ['with-lines'],
    });
    const queriesBefore = world.shopify.queries.length;
    const flowId = await acme.publish(
      importFlow('fields', {
        query: 'tag:with-lines',
        pageSize: 250,
        fields: ['lineItems', 'shippingAddress', 'customer'],
      }),
    );
    const batch = await firstBatch(flowId);
    const [task] = await allTasks(batch.id);
    const record = (await acme.call('GET', `/api/v1/runs/${task.runId}`)).body.steps.find(
      (step: any) => step.key === 'import',
    ).output;
    expect(record).toMatchObject({
      Id: order.id,
      ShippingAddress: null,
      Customer: null,
      LineItems: { PageInfo: { HasNextPage: true, EndCursor: expect.any(String) } },
    });
    expect(record.LineItems.Nodes).toHaveLength(10);
    expect(record.LineItems.Nodes[0]).toEqual({
      Id: order.lineItems[0].id,
      Sku: 'SKU-PART-0',
      Title: 'Part 0',
      Quantity: 1,
      OriginalUnitPriceSet: {
        ShopMoney: { Amount: 2, CurrencyCode: 'USD' },
        PresentmentMoney: { Amount: 2, CurrencyCode: 'USD' },
      },
      DiscountedTotalSet: {
        ShopMoney: { Amount: 2, CurrencyCode: 'USD' },
        PresentmentMoney: { Amount: 2, CurrencyCode: 'USD' },
      },
    });
    const pages = world.shopify.queries.slice(queriesBefore).filter((query) => query.operationName === 'ImportOrders');
    // 14 + 72 + 1 + 1 = 88 points an order (11 would fit a page), and the window holds one.
    expect(pages.length).toBeGreaterThan(0);
    expect([...new Set(pages.map((query) => query.requestedQueryCost))]).toEqual([2 + 1 * 88]);
  });

  it('a poll Shopify refuses fails its batch, with the reason, and leaves the field where it was', async () => {
    const { consumerKey, consumerSecret, tokenId, tokenSecret, accountId } = ERP_CREDENTIALS;
    await acme.call('PUT', '/api/v1/destinations/revoked', {
      type: 'shopify',
      operation: 'shopify.orders-import-list',
      graphqlUrl: world.shopify.url,
      adminApiAccessToken: 'shpat_revoked',
      erp: { apiUrl: world.erp.apiUrl, consumerKey, consumerSecret, tokenId, tokenSecret, accountId },
    });
    const flowId = await acme.publish(importFlow('revoked', { destination: 'revoked' }));
    const batch = await firstBatch(flowId);
    expect(batch.status).toBe('failed');
    // The fan-out node fails its batch before its run's end is written.
    const run = await acme.settledRun(batch.runId);
    expect(run).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('401') },
    });
    expect((await acme.call('GET', `/api/v1/ingress-incremental-fields/${flowId}`)).status).toBe(404);
  });

  it('refuses a fan-out operation that does not follow the trigger', async () => {
    const document = importFlow('misplaced');
    document.nodes = [document.nodes[1], document.nodes[0]];
    document.edges = [
      { from: 'trigger', to: 'export' },
      { from: 'export', to: 'import' },
    ];
    const created = await acme.call('POST', '/api/v1/editable-flows', document);
    expect(created.status).toBe(400);
    expect(created.body.errors).toContainEqual(
      expect.objectContaining({
        path: '$.body.nodes[1]',
        node: 'import',
        message: expect.stringContaining('must follow the trigger directly'),
      }),
    );
  });

  it('test-runs the import draft: orders are read; nothing is imported, no field moves, no order marked', async () => {
    const order = shop().createOrder({
      lines: [{ title: 'Tested', price: 20, quantity: 1 }],
      synced: true,
      tags: ['test-run'],
    });
    const { refund } = shop().createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] });
    const created = await acme.call(
      'POST',
      '/api/v1/editable-flows',
      importFlow('import-tested', { query: 'tag:test-run' }),
    );
    const flowId = created.body.id;
    const receiptsBefore = world.erp.receipts().length;

    const dry = (await acme.call('POST', `/api/v1/editable-flows/${flowId}/test`, {})).body;
    expect(dry).toMatchObject({
      status: 'succeeded',
      dryRun: true,
      batch: { count: 1, items: [expect.objectContaining({ Id: order.id })] },
    });
    // The export shows the ERP request it would send (credentials masked) and the marks it would set.
    expect(dry.steps.find((step: any) => step.nodeId === 'export').output).toMatchObject({
      dryRun: true,
      wouldSend: {
        orderId: order.id,
        refunds: [
          {
            refundId: refund.id,
            erp: {
              method: 'POST',
              headers: { authorization: '[REDACTED]', 'idempotency-key': refund.id },
              body: { Refund: { Id: refund.id } },
            },
            markOrder: {
              orderId: order.id,
              listOfRefundProcessed: [String(refund.legacyResourceId)],
              tag: 'IPaaS Refunds Exported: 1',
            },
          },
        ],
      },
    });
    expect(JSON.stringify(dry)).not.toContain(ERP_CREDENTIALS.tokenSecret);
    expect(world.erp.receipts().length).toBe(receiptsBefore);

    const real = (await acme.call('POST', `/api/v1/editable-flows/${flowId}/test`, { dryRun: false })).body;
    expect(real).toMatchObject({ status: 'succeeded', dryRun: false });
    const receipts = world.erp.receipts().slice(receiptsBefore) as any[];
    expect(receipts.map((record) => record.Refund.Id)).toEqual([refund.id]);
    expect(exportedTags(order.id)).toEqual([]);
    expect((await acme.call('GET', `/api/v1/ingress-incremental-fields/${flowId}`)).status).toBe(404);
    expect((await acme.call('GET', `/api/v1/batches?flowId=${flowId}`)).body.nodes).toEqual([]);
    expect((await acme.call('GET', `/api/v1/runs?flowId=${flowId}`)).body.nodes).toEqual([]);
  });
});
