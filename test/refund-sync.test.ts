import http from 'node:http';
import { Kind, type OperationDefinitionNode, parse, print, validate } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oauth1Header } from '../operations/core/oauth1.ts';
import { orderImportDocuments } from '../operations/shopify/order-record.ts';
import { orderMarkDocuments } from '../operations/shopify/order-marks.ts';
import { HttpClient } from '../engine/outbound/http-client.ts';
import { ShopifyAdminApi } from '../operations/shopify/admin-api.ts';
import { requestedCost } from '../operations/shopify/query-cost.ts';
import { ORDER_MARKS_QUERY, refundDocuments } from '../operations/shopify/refund-query.ts';
import { webhookDocuments } from '../operations/shopify/webhooks.ts';
import { erpReplies } from './support/erp-simulator.ts';
import {
  eventually,
  sendWebhook,
  startSiblingApi,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import {
  ERP_CREDENTIALS,
  refundFlow,
  refundWorld,
  SHOP_TOKEN,
  WEBHOOK_SECRET,
  APP_CLIENT,
} from './support/refund-fixture.ts';
import { ADMIN_API_VERSIONS, adminSchema } from './support/shopify-admin-schema.ts';
import { requestedQueryCost, ShopifySimulator } from './support/shopify-simulator.ts';

let env: TestPlatform;
let acme: ApiClient;
let world: Awaited<ReturnType<typeof refundWorld>>;
const FLOW = 'refunds';
const PUBLIC_URL = 'https://tributary.example.com';

beforeAll(async () => {
  // Shopify delivers to https addresses only: the platform is reached through a proxy at PUBLIC_URL.
  env = await startTestPlatform('postgres', undefined, { adapterWaitMs: 3000, publicUrl: PUBLIC_URL });
  acme = await env.tenant('acme');
  world = await refundWorld(acme);
  await acme.publish(refundFlow(FLOW, { orderSyncRecheckSeconds: 1 }));
});
afterAll(async () => {
  await world?.close();
  await env?.close();
});

const shop = () => world.shopify.shop;
const order = (lines = 2, extra: Partial<Parameters<ReturnType<typeof shop>['createOrder']>[0]> = {}) =>
  shop().createOrder({
    lines: Array.from({ length: lines }, (_, i) => ({ title: `Item ${i + 1}`, price: 10 + i, quantity: 2 })),
    shipping: 5,
    synced: true,
    tags: ['wholesale'],
    ...extra,
  });

/** Deliver the refund's webhook and wait for its run; returns the run and what the ERP got for it. */
async function sync(webhookBody: string, flowKey = FLOW) {
  const before = world.erp.receipts().length;
  const accepted = await world.deliver(env.url, flowKey, webhookBody);
  expect(accepted.status).toBe(202);
  const run = await acme.settledRun(accepted.body.runId);
  return { run, receipts: world.erp.receipts().slice(before) as any[] };
}

const syncStep = (run: any) => run.steps.find((step: any) => step.key === 'sync');
const exportedTags = (orderId: string) =>
  shop()
    .orders.get(orderId)!
    .tags.filter((tag: string) => tag.startsWith('IPaaS Refunds Exported'));
const processed = (orderId: string) =>
  JSON.parse(
    shop().orders.get(orderId)!.metafield({ namespace: 'refundProcessed', key: 'listOfRefundProcessed' })?.value ??
      '[]',
  );

describe('the simulated ERP', () => {
  it('turns away a reused nonce, a stale timestamp, a lower-case realm and a wrong signature', async () => {
    const { consumerKey, consumerSecret, tokenId: token, tokenSecret, accountId } = ERP_CREDENTIALS;
    const credentials = { consumerKey, consumerSecret, token, tokenSecret, realm: accountId.toUpperCase() };
    const post = (authorization: string) =>
      fetch(world.erp.apiUrl, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: '{}',
      });
    const now = String(Math.floor(Date.now() / 1000));
    const signed = oauth1Header('POST', world.erp.apiUrl, credentials, 'nonce-once-only', now);
    expect((await post(signed)).status).toBe(200);
    expect((await post(signed)).status).toBe(401);
    expect(
      (await post(oauth1Header('POST', world.erp.apiUrl, credentials, 'fresh-nonce-1', String(Number(now) - 600))))
        .status,
    ).toBe(401);
    expect((await post(oauth1Header('POST', world.erp.apiUrl, { ...credentials, realm: accountId }))).status).toBe(401);
    expect((await post(oauth1Header('POST', world.erp.apiUrl, { ...credentials, tokenSecret: 'wrong' }))).status).toBe(
      401,
    );
  });
});

describe('the Shopify Admin client', () => {
  const outbound = new HttpClient();

  it('meets a shop that rejects what real Shopify would: unknown fields, over-large pages, no page size', async () => {
    const shopify = await new ShopifySimulator({ accessToken: SHOP_TOKEN }).start();
    try {
      const api = new ShopifyAdminApi(
        { shopUrl: shopify.url, apiVersion: '2026-10', accessToken: SHOP_TOKEN },
        outbound,
      );
      const order = shopify.shop.createOrder({ lines: [{ title: 'Mug', price: 9, quantity: 1 }] });
      await expect(api.query('query { order(id: "x") { id refundsProcessed } }')).rejects.toMatchObject({
        kind: 'permanent',
        message: expect.stringContaining('Cannot query field "refundsProcessed" on type "Order"'),
      });
      await expect(
        api.query('query($id: ID!) { order(id: $id) { lineItems(first: 251) { nodes { id } } } }', { id: order.id }),
      ).rejects.toMatchObject({ kind: 'permanent' });
      await expect(
        api.query('query($id: ID!) { order(id: $id) { lineItems { nodes { id } } } }', { id: order.id }),
      ).rejects.toMatchObject({ message: expect.stringContaining('first or last') });
      await expect(
        new ShopifyAdminApi(
          { shopUrl: shopify.url, apiVersion: '2026-10', accessToken: 'shpat_wrong' },
          outbound,
        ).query(ORDER_MARKS_QUERY, { id: order.id }),
      ).rejects.toMatchObject({ kind: 'permanent', message: expect.stringContaining('401') });
      expect(await api.query(ORDER_MARKS_QUERY, { id: order.id })).toEqual({
        order: { id: order.id, tags: [], metafield: null },
      });
    } finally {
      await shopify.close();
    }
  });

  it('renews a client-credentials token before it expires, without a refused call', async () => {
    // A token that lasts 5 min 1 s is due for renewal (5 min before expiry) one second after it is issued.
    const shopify = await new ShopifySimulator({ ...APP_CLIENT, tokenLifetimeS: 301 }).start();
    try {
      const api = new ShopifyAdminApi({ shopUrl: shopify.url, apiVersion: '2025-10', ...APP_CLIENT }, outbound);
      const order = shopify.shop.createOrder({ lines: [{ title: 'Mug', price: 9, quantity: 1 }] });
      await api.query(ORDER_MARKS_QUERY, { id: order.id });
      await api.query(ORDER_MARKS_QUERY, { id: order.id });
      expect(shopify.counts).toEqual({ grants: 1, unauthorized: 0 });
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await api.query(ORDER_MARKS_QUERY, { id: order.id });
      expect(shopify.counts).toEqual({ grants: 2, unauthorized: 0 });
    } finally {
      await shopify.close();
    }
  });
});

describe("the Shopify Admin client's cached tokens", () => {
  it('are reused only with the secret they were granted for: a known client id alone gets nothing', async () => {
    const shopify = await new ShopifySimulator({ ...APP_CLIENT }).start();
    const outbound = new HttpClient();
    try {
      const order = shopify.shop.createOrder({ lines: [{ title: 'Mug', price: 9, quantity: 1 }] });
      const owner = new ShopifyAdminApi({ shopUrl: shopify.url, apiVersion: '2025-10', ...APP_CLIENT }, outbound);
      await owner.query(ORDER_MARKS_QUERY, { id: order.id });
      const stranger = new ShopifyAdminApi(
        { shopUrl: shopify.url, apiVersion: '2025-10', clientId: APP_CLIENT.clientId, clientSecret: 'not-the-secret' },
        outbound,
      );
      await expect(stranger.query(ORDER_MARKS_QUERY, { id: order.id })).rejects.toMatchObject({ kind: 'permanent' });
      expect(shopify.counts.grants).toBe(1);
    } finally {
      await shopify.close();
    }
  });
});

const everyDocument = [...refundDocuments, ...orderMarkDocuments, ...webhookDocuments, ...orderImportDocuments];

describe('GraphQL documents', () => {
  it("are all valid against Shopify's real Admin schema, 2025-10 and 2026-10", () => {
    for (const version of ADMIN_API_VERSIONS) {
      for (const document of everyDocument) {
        expect(
          validate(adminSchema(version), parse(document)).map((error) => error.message),
          `${version}: ${document.slice(0, 60)}`,
        ).toEqual([]);
      }
    }
  });

  it('cost what the client reckons before sending them, as Shopify reckons it on the schema, whatever the sizes', () => {
    const schema = adminSchema(ADMIN_API_VERSIONS[0]);
    let compared = 0;
    for (const document of everyDocument) {
      const operation = parse(document).definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)!;
      const sizes = (operation as OperationDefinitionNode).variableDefinitions!.flatMap((definition) =>
        print(definition.type).startsWith('Int') ? [definition.variable.name.value] : [],
      );
      // Each size its own value, so that one read in place of another shows.
      for (const base of [0, 1, 4, 9]) {
        const variables = Object.fromEntries(sizes.map((size, i) => [size, base + i]));
        expect(requestedCost(document, variables), document.slice(0, 60)).toBe(
          requestedQueryCost(schema, document, variables),
        );
        compared++;
      }
    }
    expect(compared).toBe(everyDocument.length * 4);
  });
});

describe('refund sync to ERP', () => {
  it('sends a full refund once, as the Refund record, and marks the order', async () => {
    const placed = order(2);
    const { refund, webhookBody } = shop().createRefund(placed.id, {
      lines: [
        { line: 0, quantity: 2 },
        { line: 1, quantity: 2 },
      ],
      shipping: true,
      note: 'damaged',
    });
    const { run, receipts } = await sync(webhookBody);
    expect(run.status).toBe('succeeded');
    expect(receipts).toHaveLength(1);
    const record = receipts[0];
    expect(Object.keys(record)).toEqual(['Shop', 'OrderId', 'Refund', 'Return', 'Transactions']);
    expect(record.Shop).toBe(world.shopify.url);
    expect(record.OrderId).toBe(placed.id);
    // Ids beyond 2^53 survive: the legacy id is the exact digits, not a rounded JS number.
    expect(record.Refund.LegacyResourceId).toBe(refund.legacyResourceId);
    expect(BigInt(record.Refund.LegacyResourceId)).toBeGreaterThan(2n ** 53n);
    expect(record.Refund.Note).toBe('damaged');
    expect(record.Refund.RefundLineItems.Nodes).toHaveLength(2);
    expect(record.Refund.RefundLineItems.PageInfo.HasNextPage).toBe(false);
    expect(record.Refund.RefundLineItems.Nodes[0].SubtotalSet).toEqual({
      ShopMoney: { Amount: 20, CurrencyCode: 'USD' },
      PresentmentMoney: { Amount: 20, CurrencyCode: 'USD' },
    });
    expect(record.Refund.RefundShippingLines.Nodes).toHaveLength(1);
    expect(record.Refund.TotalRefundedSet.ShopMoney.Amount).toBeCloseTo((20 + 22) * 1.1 + 5.5, 2);
    expect(record.Refund.Transactions.Nodes).toHaveLength(1);
    const transaction = record.Refund.Transactions.Nodes[0];
    expect(transaction).toMatchObject({
      Kind: 'REFUND',
      Status: 'SUCCESS',
      StorePaymentsSet: { RefundSet: { AcquirerReferenceNumber: expect.any(String) } },
    });
    expect(typeof transaction.ReceiptJson).toBe('string');
    expect(transaction.Order).toEqual(record.Refund.Order);
    expect(transaction.ParentTransaction.Id).toBe(placed.transactions[0].id);
    expect(record.Refund.Order.CustomAttributes).toContainEqual({ Key: 'orderSynced', Value: 'TRUE' });
    expect(record.Refund.Return).toBeNull();
    expect(record.Return).toBeNull();
    // The initial sale is left out of the top-level list.
    expect(record.Transactions.map((item: any) => item.Id)).toEqual([transaction.Id]);
    expect(typeof record.Transactions[0].ReceiptJson).toBe('string');

    expect(exportedTags(placed.id)).toEqual(['IPaaS Refunds Exported: 1']);
    expect(shop().orders.get(placed.id)!.tags).toContain('wholesale');
    expect(processed(placed.id)).toEqual([refund.legacyResourceId]);
    expect(syncStep(run).output).toMatchObject({
      refundLegacyId: refund.legacyResourceId,
      tag: 'IPaaS Refunds Exported: 1',
      erp: { status: 200 },
    });
    expect(run.steps.find((step: any) => step.key === 'sync/send-to-erp').output.record).toEqual(record);
  });

  it('partial, shipping-only, duty and zero-money refunds', async () => {
    const three = order(3);
    const partial = await sync(
      shop().createRefund(three.id, {
        lines: [
          { line: 0, quantity: 1 },
          { line: 2, quantity: 2 },
        ],
      }).webhookBody,
    );
    expect(partial.run.status).toBe('succeeded');
    expect(
      partial.receipts[0].Refund.RefundLineItems.Nodes.map((item: any) => [item.LineItem.Id, item.Quantity]),
    ).toEqual([
      [three.lineItems[0].id, 1],
      [three.lineItems[2].id, 2],
    ]);

    const shippingOnly = await sync(shop().createRefund(order(1).id, { shipping: true }).webhookBody);
    expect(shippingOnly.run.status).toBe('succeeded');
    expect(shippingOnly.receipts[0].Refund.RefundLineItems.Nodes).toEqual([]);
    expect(shippingOnly.receipts[0].Refund.RefundShippingLines.Nodes).toHaveLength(1);

    const dutiable = shop().createOrder({
      lines: [{ title: 'Wool coat', price: 120, quantity: 1, duty: 12.5 }],
      synced: true,
      presentment: { currency: 'EUR', rate: 0.9 },
    });
    const duty = await sync(shop().createRefund(dutiable.id, { duties: true }).webhookBody);
    expect(duty.run.status).toBe('succeeded');
    expect(duty.receipts[0].Refund.Duties).toEqual([
      {
        AmountSet: {
          ShopMoney: { Amount: 12.5, CurrencyCode: 'USD' },
          PresentmentMoney: { Amount: 11.25, CurrencyCode: 'EUR' },
        },
        OriginalDuty: {
          Id: dutiable.lineItems[0].duties[0].id,
          HarmonizedSystemCode: '6109100010',
          CountryCodeOfOrigin: 'PT',
        },
      },
    ]);

    const zero = await sync(
      shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1, restockType: 'CANCEL' }], zeroMoney: true })
        .webhookBody,
    );
    expect(zero.run.status).toBe('succeeded');
    expect(zero.receipts[0].Refund.Transactions.Nodes).toEqual([]);
    expect(zero.receipts[0].Transactions).toEqual([]);
    expect(zero.receipts[0].Refund.TotalRefundedSet.ShopMoney.Amount).toBe(0);
  });

  it('a refund with a return: reverse fulfillment dispositions, deliveries and an exchange', async () => {
    const placed = order(2);
    const ret = shop().createReturn(placed.id, {
      lines: [{ line: 1, quantity: 1, reason: 'SIZE_TOO_SMALL' }],
      exchange: [{ title: 'Item 2 (L)', price: 11 }],
      disposition: 'RESTOCKED',
    });
    const { run, receipts } = await sync(
      shop().createRefund(placed.id, { lines: [{ line: 1, quantity: 1 }], return: ret }).webhookBody,
    );
    expect(run.status).toBe('succeeded');
    const record = receipts[0];
    expect(record.Refund.Return).toEqual({
      Id: ret.id,
      Name: ret.name,
      Status: 'CLOSED',
      TotalQuantity: 1,
      Decline: null,
    });
    expect(record.Return).toMatchObject({ Id: ret.id, Order: { Id: placed.id }, ThirdPartyConfirmation: null });
    expect(record.Return.ReturnLineItems.Nodes[0]).toMatchObject({
      ReturnReason: 'SIZE_TOO_SMALL',
      FulfillmentLineItem: { LineItem: { Id: placed.lineItems[1].id } },
    });
    const reverseLine = record.Return.ReverseFulfillmentOrders.Nodes[0].LineItems.Nodes[0];
    expect(reverseLine.Dispositions).toEqual([
      {
        Id: expect.stringMatching(/^gid:/),
        Location: { Id: expect.stringMatching(/^gid:\/\/shopify\/Location\//) },
        Quantity: 1,
        Type: 'RESTOCKED',
      },
    ]);
    expect(reverseLine.FulfillmentLineItem.LineItem.Title).toBe('Item 2');
    expect(record.Return.ReverseDeliveries.Nodes).toHaveLength(1);
    expect(record.Return.ExchangeLineItems.Nodes).toHaveLength(1);
    expect(record.Return.ExchangeLineItems.Nodes[0].LineItems[0].Title).toBe('Item 2 (L)');
  });

  it('pages through a refund with more line items than one page', async () => {
    const big = order(27);
    const { run, receipts } = await sync(
      shop().createRefund(big.id, { lines: big.lineItems.map((_: unknown, line: number) => ({ line, quantity: 1 })) })
        .webhookBody,
    );
    expect(run.status).toBe('succeeded');
    expect(receipts[0].Refund.RefundLineItems.Nodes.map((item: any) => item.LineItem.Id)).toEqual(
      big.lineItems.map((item: any) => item.id),
    );
    expect(receipts[0].Refund.RefundLineItems.PageInfo.HasNextPage).toBe(false);
    // Every query stayed within Shopify's limit of 1000 points.
    expect(world.shopify.queries.filter((query) => query.errors)).toEqual([]);
  });

  it('asks for the lines its webhook shows, near the least cost; a body that says otherwise costs more, drops nothing', async () => {
    const refundOf = (lines: number) => {
      const placed = order(lines);
      return shop().createRefund(placed.id, {
        lines: placed.lineItems.map((_: unknown, line: number) => ({ line, quantity: 1 })),
        shipping: true,
      });
    };
    const costs = async (webhookBody: string) => {
      const before = world.shopify.queries.length;
      const { run, receipts } = await sync(webhookBody);
      expect(run.status).toBe('succeeded');
      // A THROTTLED answer (the shop's bucket is this file's) was waited out and sent again: it cost nothing.
      const queries = world.shopify.queries.slice(before).filter((query) => !query.throttled);
      expect(queries.filter((query) => query.errors)).toEqual([]);
      const total = (key: 'requestedQueryCost' | 'minimumQueryCost') =>
        queries.reduce((sum, query) => sum + (query[key] ?? 0), 0);
      return {
        receipt: receipts[0],
        queries,
        requested: total('requestedQueryCost'),
        least: total('minimumQueryCost'),
      };
    };
    const lineIds = (receipt: any) => receipt.Refund.RefundLineItems.Nodes.map((item: any) => item.LineItem.Id);

    // As Shopify sent it: one query reads the refund, and the marks come back from the two mutations.
    const told = refundOf(5);
    const asSent = await costs(told.webhookBody);
    expect(asSent.queries.map((query) => query.operationName)).toEqual([
      'RefundForErp',
      'MarkRefundProcessed',
      'TagOrder',
    ]);
    expect(lineIds(asSent.receipt)).toEqual(told.refund.refundLineItems.map((item: any) => item.lineItem.id));
    expect(asSent.requested).toBeLessThanOrEqual(1.5 * asSent.least);

    // A body that shows one line of five: the rest come in pages.
    const understated = refundOf(5);
    const fewer = JSON.parse(understated.webhookBody);
    fewer.refund_line_items = fewer.refund_line_items.slice(0, 1);
    const paged = await costs(JSON.stringify(fewer));
    expect(paged.queries.map((query) => query.operationName)).toContain('RefundRefundLineItemsPage');
    expect(lineIds(paged.receipt)).toEqual(understated.refund.refundLineItems.map((item: any) => item.lineItem.id));

    // One that shows 1,000 lines asks for no page over Shopify's 1000-point limit.
    const overstated = refundOf(3);
    const more = JSON.parse(overstated.webhookBody);
    more.refund_line_items = Array.from({ length: 1000 }, () => more.refund_line_items[0]);
    const capped = await costs(JSON.stringify(more));
    expect(lineIds(capped.receipt)).toEqual(overstated.refund.refundLineItems.map((item: any) => item.lineItem.id));
  });

  it('two refunds of one order: the tag goes 1 -> 2, also when both are processed at once', async () => {
    const sequential = order(2);
    const first = shop().createRefund(sequential.id, { lines: [{ line: 0, quantity: 1 }] });
    expect((await sync(first.webhookBody)).run.status).toBe('succeeded');
    expect(exportedTags(sequential.id)).toEqual(['IPaaS Refunds Exported: 1']);
    const second = shop().createRefund(sequential.id, { lines: [{ line: 1, quantity: 1 }] });
    const secondSync = await sync(second.webhookBody);
    expect(secondSync.run.status).toBe('succeeded');
    expect(exportedTags(sequential.id)).toEqual(['IPaaS Refunds Exported: 2']);
    expect(processed(sequential.id)).toEqual([first.refund.legacyResourceId, second.refund.legacyResourceId]);
    // The top-level list holds every transaction up to this refund except the sale.
    expect(secondSync.receipts[0].Transactions).toHaveLength(2);

    const concurrent = order(3);
    const refunds = [0, 1, 2].map((line) => shop().createRefund(concurrent.id, { lines: [{ line, quantity: 1 }] }));
    const runs = await Promise.all(
      refunds.map(async ({ webhookBody }) => {
        const accepted = await world.deliver(env.url, FLOW, webhookBody);
        return acme.settledRun(accepted.body.runId);
      }),
    );
    expect(runs.map((run) => run.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect([...processed(concurrent.id)].sort()).toEqual(refunds.map(({ refund }) => refund.legacyResourceId).sort());
    expect(exportedTags(concurrent.id)).toEqual(['IPaaS Refunds Exported: 3']);
  });

  it('keeps an id another exporter wrote between our read and our write (compare-and-set)', async () => {
    const placed = order(1);
    const { refund, webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    world.shopify.beforeExecute = (fields) => {
      if (!fields.includes('metafieldsSet')) return;
      world.shopify.beforeExecute = undefined;
      shop()
        .mutations('2025-10')
        .metafieldsSet({
          metafields: [
            {
              ownerId: placed.id,
              namespace: 'refundProcessed',
              key: 'listOfRefundProcessed',
              type: 'json',
              value: '["4242"]',
            },
          ],
        });
    };
    const { run } = await sync(webhookBody);
    expect(run.status).toBe('succeeded');
    expect(processed(placed.id)).toEqual(['4242', refund.legacyResourceId]);
    expect(exportedTags(placed.id)).toEqual(['IPaaS Refunds Exported: 2']);
  });

  it('the same webhook delivered three times reaches the ERP once; a later redelivery is skipped', async () => {
    const placed = order(1);
    const { refund, webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    const before = world.erp.receipts().length;
    const answers = await Promise.all(
      [1, 2, 3].map(() => world.deliver(env.url, FLOW, webhookBody, `webhook-${refund.legacyResourceId}`)),
    );
    const runIds = new Set(answers.map((answer) => answer.body.runId));
    expect(runIds.size).toBe(1);
    expect((await acme.settledRun([...runIds][0])).status).toBe('succeeded');

    // Shopify may also resend it as a new delivery (a new webhook id) after the export.
    const resent = await world.deliver(env.url, FLOW, webhookBody);
    const skipped = await acme.settledRun(resent.body.runId);
    expect(skipped.status).toBe('skipped');
    expect(syncStep(skipped).output.reason).toContain("already in the order's listOfRefundProcessed");
    expect(world.erp.receipts().length - before).toBe(1);
    expect(exportedTags(placed.id)).toEqual(['IPaaS Refunds Exported: 1']);
  });

  it("sends again on the ERP's 429 and concurrency limit with fresh signatures, retries its 500, then succeeds", async () => {
    world.erp.script(erpReplies.tooManyRequests, erpReplies.concurrencyLimit, erpReplies.serverError);
    const placed = order(1);
    const requestsBefore = world.erp.requests.length;
    const { run, receipts } = await sync(
      shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
    );
    expect(run.status).toBe('succeeded');
    expect(receipts).toHaveLength(1);
    const attempts = world.erp.requests.slice(requestsBefore);
    expect(attempts.map((request) => request.reply?.status)).toEqual([429, 400, 500, 200]);
    // The ERP simulator turns away reused nonces: four accepted signatures mean four fresh ones.
    expect(attempts.every((request) => !request.refused)).toBe(true);
    // Refused for the account's load, a request goes again with its next turn on the budget, within its attempt; the
    // 500 spent one.
    expect(syncStep(run).attempts).toBe(2);
  });

  it("gives up on an ERP silent past the node's timeout and sends again with the same idempotency key", async () => {
    await acme.publish({
      ...refundFlow('refunds-short-timeout'),
      nodes: [{ ...refundFlow('x').nodes[0], timeoutMs: 1500 }],
    });
    world.erp.script('hang');
    const placed = order(1);
    const { refund, webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    const requestsBefore = world.erp.requests.length;
    const { run, receipts } = await sync(webhookBody, 'refunds-short-timeout');
    expect(run.status).toBe('succeeded');
    expect(receipts).toHaveLength(1);
    const sent = world.erp.requests.slice(requestsBefore);
    expect(sent).toHaveLength(2);
    expect(sent.map((request) => request.headers['idempotency-key'])).toEqual([refund.id, refund.id]);
    expect(syncStep(run).attempts).toBe(2);
  });

  it("fails on the ERP's permanent 400 with its own message, and does not mark the order", async () => {
    world.erp.script(erpReplies.invalidField);
    const placed = order(1);
    const { run, receipts } = await sync(
      shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
    );
    expect(run.status).toBe('failed');
    expect(receipts).toEqual([]);
    expect(run.error).toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining('INVALID_FLD_VALUE: You have entered an Invalid Field Value'),
      details: { erpCode: 'INVALID_FLD_VALUE', status: 400 },
    });
    expect(exportedTags(placed.id)).toEqual([]);
    expect(processed(placed.id)).toEqual([]);

    world.erp.script(erpReplies.okWithError);
    const caught = await sync(shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody);
    expect(caught.run.status).toBe('failed');
    expect(caught.run.error.message).toContain('period is closed');
    expect(exportedTags(placed.id)).toEqual([]);
  });

  it('waits out a Shopify THROTTLED answer without failing', async () => {
    const placed = order(1);
    const { webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    const queriesBefore = world.shopify.queries.length;
    world.shopify.drainBucket();
    const { run, receipts } = await sync(webhookBody);
    expect(run.status).toBe('succeeded');
    expect(receipts).toHaveLength(1);
    const queries = world.shopify.queries.slice(queriesBefore);
    expect(queries[0]).toMatchObject({ operationName: 'RefundForErp', throttled: true });
    expect(queries.some((query) => query.operationName === 'RefundForErp' && !query.throttled)).toBe(true);
    expect(syncStep(run).attempts).toBe(1);
  });

  it('a refund whose order is not synced yet waits, then goes once the order is', async () => {
    const placed = order(1, { synced: false });
    const accepted = await world.deliver(
      env.url,
      FLOW,
      shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
    );
    const waiting = await eventually(async () => {
      const run = (await acme.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body;
      expect(run.status).toBe('waiting');
      expect(run.error.message).toContain('not synced to the ERP yet');
      return run;
    });
    expect(waiting.error.kind).toBe('later');
    const receiptsBefore = world.erp.receipts().length;
    shop().markSynced(placed.id);
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(world.erp.receipts().length - receiptsBefore).toBe(1);
    // Waiting spent no attempts.
    expect(syncStep(run).attempts).toBe(1);

    await acme.publish(refundFlow('refunds-no-wait', { orderSyncWaitMinutes: 0 }));
    const late = await sync(
      shop().createRefund(order(1, { synced: false }).id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
      'refunds-no-wait',
    );
    expect(late.run.status).toBe('failed');
    expect(late.run.error.message).toMatch(/was not marked orderSynced = TRUE within 0 minutes/);
  });

  it("registers the flow URL as the shop's refunds/create webhook in one call", async () => {
    const flowId = (await acme.call('GET', '/api/v1/flows')).body.nodes.find((flow: any) => flow.key === FLOW).id;
    const created = await acme.call('POST', '/api/v1/destinations/shop/webhooks', { flowId });
    expect(created.status).toBe(201);
    const uri = `${PUBLIC_URL}/hooks/acme/${FLOW}`;
    expect(created.body).toEqual({
      id: expect.stringMatching(/^gid:\/\/shopify\/WebhookSubscription\/\d+$/),
      topic: 'refunds/create',
      uri,
      apiVersion: '2025-10',
    });
    expect(shop().webhookSubscriptions).toEqual([
      expect.objectContaining({ topic: 'REFUNDS_CREATE', uri, format: 'JSON' }),
    ]);

    // Behind other public URLs: plain http is refused before Shopify is asked; a loopback address is registered
    // with a warning.
    for (const publicUrl of ['http://tributary.example.com', 'https://localhost:8443']) {
      // Another address, the same deployment: it verifies the tokens the first one issued (AUTH_ISSUER agrees).
      const proxied = await startSiblingApi(env, { publicUrl, authIssuer: PUBLIC_URL });
      try {
        const answer = await acme.at(proxied.url).call('POST', '/api/v1/destinations/shop/webhooks', { flowId });
        if (publicUrl.startsWith('http:')) {
          expect(answer.status).toBe(400);
          expect(answer.body.errors).toEqual([
            { path: '$.uri', message: expect.stringContaining('set PUBLIC_URL to the https address') },
          ]);
        } else {
          expect(answer.status).toBe(201);
          expect(answer.body.warnings).toEqual([
            expect.stringContaining('localhost is a loopback name: shopify cannot deliver to it'),
          ]);
        }
      } finally {
        await proxied.close();
      }
    }
    expect(shop().webhookSubscriptions).toHaveLength(2);

    // A "shop" that answers 200 without data is a 502 naming the answer, not a 500.
    const blank = http.createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
    );
    await new Promise<void>((resolve) => blank.listen(0, '127.0.0.1', resolve));
    try {
      const graphqlUrl = `http://127.0.0.1:${(blank.address() as { port: number }).port}/`;
      expect(
        (
          await acme.call('PUT', '/api/v1/destinations/blank', {
            type: 'shopify',
            operation: 'shopify.refund-sync-to-erp',
            graphqlUrl,
            adminApiAccessToken: 'shpat_unused-token',
            erp: {
              apiUrl: 'https://erp.example.com/',
              consumerKey: 'consumer-key',
              consumerSecret: 'consumer-secret',
              tokenId: 'token-id',
              tokenSecret: 'token-secret',
              accountId: 'a',
            },
          })
        ).status,
      ).toBe(201);
      const broken = await acme.call('POST', '/api/v1/destinations/blank/webhooks', { flowId });
      expect(broken.status).toBe(502);
      expect(broken.body.detail).toBe('Shopify answered 200 without data: {"ok":true}');
    } finally {
      blank.close();
    }

    expect((await acme.call('POST', '/api/v1/destinations/elsewhere/webhooks', { flowId })).status).toBe(404);
    const unknownFlow = await acme.call('POST', '/api/v1/destinations/shop/webhooks', { flowId: 'no-such-flow' });
    expect(unknownFlow.status).toBe(400);
    expect(unknownFlow.body.errors).toEqual([{ path: '$.body.flowId', message: 'no flow no-such-flow' }]);
  });

  it('answers 401 to a bad signature and records nothing', async () => {
    const { webhookBody } = shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1 }] });
    const runsBefore = (await acme.call('GET', '/api/v1/runs?first=200')).body.nodes.length;
    const forged = await world.shopify.deliverWebhook(`${env.url}/hooks/acme/${FLOW}`, {
      topic: 'refunds/create',
      body: webhookBody,
      secret: 'not-the-app-secret',
    });
    expect(forged.status).toBe(401);
    expect((await acme.call('GET', '/api/v1/runs?first=200')).body.nodes.length).toBe(runsBefore);
  });

  it('keeps credentials out of run records and logs', async () => {
    const { run } = await sync(shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody);
    const runs = JSON.stringify((await acme.call('GET', '/api/v1/runs?first=200')).body) + JSON.stringify(run);
    for (const secret of [
      SHOP_TOKEN,
      WEBHOOK_SECRET,
      ERP_CREDENTIALS.consumerSecret,
      ERP_CREDENTIALS.tokenSecret,
      ERP_CREDENTIALS.consumerKey,
      ERP_CREDENTIALS.tokenId,
    ]) {
      expect(runs).not.toContain(secret);
      expect(env.lines.join('')).not.toContain(secret);
    }
  });
});

describe('refund sync on another API version, with client credentials', () => {
  let other: Awaited<ReturnType<typeof refundWorld>>;
  let globex: ApiClient;
  beforeAll(async () => {
    globex = await env.tenant('globex');
    other = await refundWorld(globex, {
      apiVersion: '2026-10',
      clientCredentials: true,
      shop: { throttledStatus: 429 },
    });
    await globex.publish(refundFlow(FLOW));
  });
  afterAll(() => other?.close());

  it('gets a client-credentials token, renews it when refused, speaks 2026-10, waits out 429 THROTTLED', async () => {
    const placed = other.shopify.shop.createOrder({ lines: [{ title: 'Lamp', price: 40, quantity: 1 }], synced: true });
    other.shopify.drainBucket();
    for (let refundNo = 0; refundNo < 2; refundNo++) {
      const { webhookBody } = other.shopify.shop.createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
      const accepted = await other.deliver(env.url, FLOW, webhookBody);
      const run = await globex.settledRun(accepted.body.runId);
      expect(run.status).toBe('succeeded');
      other.shopify.expireTokens();
    }
    expect(other.erp.receipts()).toHaveLength(2);
    expect(other.shopify.queries.every((query) => query.version === '2026-10')).toBe(true);
    expect(other.shopify.queries[0].throttled).toBe(true);
    expect(other.shopify.shop.orders.get(placed.id)!.tags).toEqual(['IPaaS Refunds Exported: 2']);
    expect(JSON.stringify((await globex.call('GET', '/api/v1/runs?first=200')).body)).not.toContain(
      APP_CLIENT.clientSecret,
    );
  });
});

describe('shopify.refund-export (one order, every refund not exported yet)', () => {
  const EXPORT = 'order-refunds';
  beforeAll(async () => {
    await acme.publish({
      key: EXPORT,
      name: 'order refunds',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'export',
          operation: 'shopify.refund-export',
          config: { destination: 'shop', orderSyncRecheckSeconds: 1 },
          retry: { maxAttempts: 4, backoffMs: 100 },
        },
      ],
      edges: [{ from: 'trigger', to: 'export' }],
    });
  });
  const exportOrder = async (orderId: string) => {
    const accepted = await sendWebhook(env.url, 'acme', EXPORT, { Id: orderId });
    expect(accepted.status).toBe(202);
    return acme.settledRun(accepted.body.runId);
  };

  it('exports the refunds whose webhooks never came, once, beside the webhook flow', async () => {
    const placed = order(3);
    const viaWebhook = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    expect((await sync(viaWebhook.webhookBody)).run.status).toBe('succeeded');
    // Two more refunds whose webhooks are lost.
    const lostDeliveries = [1, 2].map((line) => shop().createRefund(placed.id, { lines: [{ line, quantity: 1 }] }));
    const lost = lostDeliveries.map(({ refund }) => refund);
    const before = world.erp.receipts().length;

    const run = await exportOrder(placed.id);
    expect(run.status).toBe('succeeded');
    expect(run.steps.find((step: any) => step.key === 'export').output).toEqual({
      orderId: placed.id,
      exported: lost.map((refund) => refund.legacyResourceId),
      tag: 'IPaaS Refunds Exported: 3',
    });
    const receipts = world.erp.receipts().slice(before) as any[];
    expect(receipts.map((record) => record.Refund.Id)).toEqual(lost.map((refund) => refund.id));
    expect(exportedTags(placed.id)).toEqual(['IPaaS Refunds Exported: 3']);
    expect(run.steps.map((step: any) => step.key).sort()).toEqual(
      [
        'export',
        'export/pending',
        ...lost.flatMap((refund) => [
          `export/mark-order/${refund.legacyResourceId}`,
          `export/send-to-erp/${refund.legacyResourceId}`,
        ]),
      ].sort(),
    );

    // Nothing left: the next export of the order is skipped, and a late webhook too.
    const again = await exportOrder(placed.id);
    expect(again.status).toBe('skipped');
    const late = await sync(lostDeliveries[0].webhookBody);
    expect(late.run.status).toBe('skipped');
    expect(world.erp.receipts().length - before).toBe(2);
  });

  it('waits for the order to be synced, and refuses a message that names no order', async () => {
    const placed = order(1, { synced: false });
    shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    const accepted = await sendWebhook(env.url, 'acme', EXPORT, { Id: placed.id });
    await eventually(async () =>
      expect((await acme.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body.status).toBe('waiting'),
    );
    shop().markSynced(placed.id);
    expect((await acme.settledRun(accepted.body.runId)).status).toBe('succeeded');

    const nameless = await acme.settledRun((await sendWebhook(env.url, 'acme', EXPORT, { id: 12 })).body.runId);
    expect(nameless).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('names no order') },
    });
  });
});

describe('the deprecated HTTP adapter route', () => {
  const route = '/api/adp/shopify/egress/sync-refund-to-erp-api';
  const settings = () => ({
    'x-store-graphql-url': world.shopify.url,
    'x-store-access-token': SHOP_TOKEN,
    'x-erp-api-url': world.erp.apiUrl,
    'x-erp-consumer-key': ERP_CREDENTIALS.consumerKey,
    'x-erp-consumer-secret': ERP_CREDENTIALS.consumerSecret,
    'x-erp-token-id': ERP_CREDENTIALS.tokenId,
    'x-erp-token-secret': ERP_CREDENTIALS.tokenSecret,
    'x-erp-account-id': ERP_CREDENTIALS.accountId,
  });
  const call = async (headers: Record<string, string>, body: string) => {
    const response = await fetch(`${env.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  let apiKey: string;
  beforeAll(async () => {
    const created = await acme.call('POST', '/api/v1/adapter-keys');
    expect(created.status).toBe(201);
    expect(created.body.url).toBe(`${PUBLIC_URL}${route}`);
    apiKey = created.body.apiKey;
  });

  it('runs the refund operation and answers with the record it sent; every answer says it is deprecated', async () => {
    const placed = order(1);
    const { refund, webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 2 }] });
    const receiptsBefore = world.erp.receipts().length;
    const answer = await call({ 'x-api-key': apiKey, ...settings() }, webhookBody);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('deprecation')).toBe('@1767225600');
    expect(answer.headers.get('link')).toContain('rel="successor-version"');
    expect(answer.body.Refund.Id).toBe(refund.id);
    expect(world.erp.receipts().slice(receiptsBefore)).toEqual([answer.body]);
    expect(exportedTags(placed.id)).toEqual(['IPaaS Refunds Exported: 1']);

    const again = await call({ 'x-api-key': apiKey, ...settings() }, webhookBody);
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toContain('application/problem+json');
    expect(again.headers.get('deprecation')).toBe('@1767225600');
    expect(again.body.detail).toContain("already in the order's listOfRefundProcessed");
    expect(world.erp.receipts().length - receiptsBefore).toBe(1);

    // The header credentials live only sealed, in a destination the adapter keeps per shop and ERP account.
    const destinations = (await acme.call('GET', '/api/v1/destinations')).body.nodes;
    expect(destinations.find((destination: any) => destination.name.startsWith('adp-'))).toMatchObject({
      credentialsSet: expect.arrayContaining(['$.adminApiAccessToken', '$.erp.tokenSecret']),
    });
    const stored =
      JSON.stringify((await acme.call('GET', '/api/v1/runs?first=200')).body) +
      JSON.stringify(destinations) +
      env.lines.join('');
    for (const secret of [apiKey, SHOP_TOKEN, ERP_CREDENTIALS.consumerSecret, ERP_CREDENTIALS.tokenSecret])
      expect(stored).not.toContain(secret);
  });

  it('refuses a missing or wrong key, bad settings and a body without a refund, as problems', async () => {
    const { webhookBody } = shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1 }] });
    const missingKey = await call(settings(), webhookBody);
    expect(missingKey.status).toBe(401);
    expect(missingKey.headers.get('deprecation')).toBe('@1767225600');
    expect((await call({ 'x-api-key': `acme.${'x'.repeat(32)}`, ...settings() }, webhookBody)).status).toBe(401);
    expect((await call({ 'x-api-key': apiKey.replace(/^acme/, 'globex'), ...settings() }, webhookBody)).status).toBe(
      401,
    );

    const { 'x-erp-token-secret': _omitted, ...incomplete } = settings();
    const badSettings = await call(
      { 'x-api-key': apiKey, ...incomplete, 'x-store-graphql-url': 'shop.example.com' },
      webhookBody,
    );
    expect(badSettings.status).toBe(400);
    expect(badSettings.body.errors.map((error: any) => error.path).sort()).toEqual([
      '$.headers["x-erp-token-secret"]',
      '$.headers["x-store-graphql-url"]',
    ]);

    const noRefund = await call({ 'x-api-key': apiKey, ...settings() }, '{"id": 1}');
    expect(noRefund.status).toBe(400);
    expect(noRefund.body.errors).toEqual([{ path: '$.body.admin_graphql_api_id', message: expect.any(String) }]);
  });

  it('answers 202 with the ids when the run outlasts the wait, and the run still completes', async () => {
    world.erp.script({ status: 200, body: { success: true }, delayMs: 4000 });
    const answer = await call(
      { 'x-api-key': apiKey, ...settings() },
      shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
    );
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ messageId: expect.any(String), runId: expect.any(String), status: 'running' });
    expect((await acme.settledRun(answer.body.runId)).status).toBe('succeeded');
  });

  it("fails with the ERP's reason as a problem", async () => {
    world.erp.script(erpReplies.invalidField);
    const answer = await call(
      { 'x-api-key': apiKey, ...settings() },
      shop().createRefund(order(1).id, { lines: [{ line: 0, quantity: 1 }] }).webhookBody,
    );
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({
      title: 'Refund sync failed',
      detail: expect.stringContaining('INVALID_FLD_VALUE'),
      errorKind: 'permanent',
      runId: expect.any(String),
    });
  });
});

describe('a refund sync recorded as a test', () => {
  it('runs again offline from its recording: Shopify and the ERP are asked nothing, every step is as recorded', async () => {
    const placed = order(2);
    const { webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 1, quantity: 1 }], shipping: true });
    const { run } = await sync(webhookBody);
    expect(run.status).toBe('succeeded');
    const fixture = (await acme.call('POST', `/api/v1/runs/${run.id}/fixture`)).body;
    // Shopify's queries and mutations, and the ERP's POST: each with its answer, credentials masked.
    const requests = fixture.exchanges.map((exchange: any) => `${exchange.step} ${exchange.request.method}`);
    expect(requests).toContain('sync/send-to-erp POST');
    const recorded = JSON.stringify(fixture);
    for (const secret of [ERP_CREDENTIALS.consumerSecret, ERP_CREDENTIALS.tokenSecret, SHOP_TOKEN])
      expect(recorded).not.toContain(secret);

    const receipts = world.erp.receipts().length;
    const tags = shop().orders.get(placed.id)!.tags;
    const again = await acme.call('POST', '/api/v1/fixtures/run', { fixture });
    expect(again.body.differences).toEqual([]);
    expect(again.body).toMatchObject({ passed: true, status: 'succeeded' });
    expect(world.erp.receipts().length).toBe(receipts);
    expect(shop().orders.get(placed.id)!.tags).toEqual(tags);
  });
});

describe('a test run of the refund flow', () => {
  it('previews the Refund record and the order marks without sending or marking anything', async () => {
    const placed = order(1);
    const { refund, webhookBody } = shop().createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
    const created = await acme.call('POST', '/api/v1/editable-flows', refundFlow('refunds-tested'));
    const receiptsBefore = world.erp.receipts().length;
    const dry = await acme.call('POST', `/api/v1/editable-flows/${created.body.id}/test`, {
      input: { body: JSON.parse(webhookBody) },
    });
    expect(dry.body).toMatchObject({ status: 'succeeded', dryRun: true });
    const preview = dry.body.steps.find((step: any) => step.key === 'sync').output;
    expect(preview).toMatchObject({
      dryRun: true,
      wouldSend: {
        refundId: refund.id,
        erp: {
          method: 'POST',
          url: world.erp.apiUrl,
          headers: { authorization: '[REDACTED]', 'idempotency-key': refund.id },
        },
        markOrder: { orderId: placed.id, tag: 'IPaaS Refunds Exported: 1' },
      },
    });
    expect(Object.keys(preview.wouldSend.erp.body)).toEqual(['Shop', 'OrderId', 'Refund', 'Return', 'Transactions']);
    expect(JSON.stringify(dry.body)).not.toContain(ERP_CREDENTIALS.consumerSecret);
    expect(world.erp.receipts().length).toBe(receiptsBefore);
    expect(exportedTags(placed.id)).toEqual([]);
    expect(processed(placed.id)).toEqual([]);
  });
});
