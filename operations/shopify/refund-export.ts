import type { FromSchema } from 'json-schema-to-ts';
import { permanent } from '../../engine/model/index.ts';
import { defineOperation, type OperationContext } from '../../engine/plugins/index.ts';
import type { ShopifyAdminApi } from './admin-api.ts';
import { openShop, shopifyConfigSchema } from './destination.ts';
import { marksOf, parseProcessed } from './order-marks.ts';
import type { OrderRecord } from './order-record.ts';
import { exportRefund, orderSyncGateSchema, previewRefundExport } from './refund-pipeline.ts';
import { ORDER_REFUNDS_QUERY, type GraphqlNode } from './refund-query.ts';

const ORDER_GID = /^gid:\/\/shopify\/Order\/\d+$/;

/** The order a message names: an imported order record (`Id`) or an order webhook (`admin_graphql_api_id`). */
function orderIdOf(body: unknown): unknown {
  const value = body as { Id?: unknown; admin_graphql_api_id?: unknown } | null;
  return value?.Id ?? value?.admin_graphql_api_id;
}

/** The order to export the refunds of: the config's, or the message's. */
function orderOf(ctx: OperationContext<RefundExportConfig>): string {
  const orderId = ctx.config.orderId ?? orderIdOf(ctx.input.body);
  if (typeof orderId !== 'string' || !ORDER_GID.test(orderId)) {
    throw permanent('the message names no order: expected an order GID like gid://shopify/Order/123', {
      details: { orderId: orderId ?? null },
    });
  }
  return orderId;
}

/** The order's refunds that are not in its processed list yet, oldest first. */
async function pendingRefunds(api: ShopifyAdminApi, orderId: string) {
  const { order } = await api.query<{ order: GraphqlNode | null }>(ORDER_REFUNDS_QUERY, { id: orderId });
  if (!order) throw permanent(`order ${orderId} does not exist in the shop`);
  const processed = marksOf(order).processed;
  return (order.refunds as GraphqlNode[])
    .filter((refund) => !processed.includes(String(refund.legacyResourceId)))
    .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
    .map((refund) => ({ id: refund.id as string, legacyResourceId: String(refund.legacyResourceId) }));
}

/** Whether an imported order record (Orders > Import List) shows refunds its processed list lacks. */
function recordShowsPending(body: unknown): boolean | undefined {
  const record = body as Partial<OrderRecord> | null;
  if (!record || !Array.isArray(record.Refunds) || record.Metafield === undefined) return undefined;
  const processed = parseProcessed(record.Metafield?.Value);
  return record.Refunds.some((refund) => !processed.includes(refund.LegacyResourceId));
}

const configSchema = shopifyConfigSchema({
  orderId: {
    type: 'string',
    description:
      "The order's GID; by default the message body's Id (an imported order) or admin_graphql_api_id (an order " +
      'webhook).',
  },
  ...orderSyncGateSchema,
});

type RefundExportConfig = FromSchema<typeof configSchema>;

/**
 * The non-deprecated refund step: for one order, every refund the ERP has not received yet (not in
 * the order's listOfRefundProcessed) is sent as the Refund record and the order marked, with
 * the guarantees of the refund operation (the same code), without relying on a webhook per refund.
 */
export const refundExport = defineOperation({
  name: 'shopify.refund-export',
  title: 'Refund export to ERP',
  description:
    "For one order: sends each refund not yet in the order's refundProcessed.listOfRefundProcessed metafield to the " +
    'ERP (the Refund record, token-based authentication), oldest first, marking the order after each. An order with ' +
    'nothing left to export ends the run as skipped.',
  version: '1.0.0',
  sideEffects: true,
  configSchema,
  async preview(ctx: OperationContext<RefundExportConfig>) {
    const orderId = orderOf(ctx);
    const { destination, api } = await openShop(ctx, ctx.config.destination);
    const refunds = [];
    for (const refund of await pendingRefunds(api, orderId))
      refunds.push(await previewRefundExport(ctx, api, destination, refund.id, ctx.config));
    return { orderId, refunds };
  },
  async run(ctx) {
    const { config } = ctx;
    const orderId = orderOf(ctx);
    // An imported record that shows nothing new saves the query: the processed list only grows, and a
    // refund made after the import changes the order, which the next poll reads again.
    if (config.orderId === undefined && recordShowsPending(ctx.input.body) === false) {
      return ctx.stop(
        'skipped',
        `the imported order ${orderId} shows no refund missing from its listOfRefundProcessed`,
      );
    }
    const { destination, api } = await openShop(ctx, config.destination);
    // The refunds to export are decided once per run (a memoized step): a pass resumed after a crash
    // finishes the same refunds, whose sends and marks are memoized, instead of judging them anew.
    const pending = await ctx.step('pending', () => pendingRefunds(api, orderId));
    if (pending.length === 0)
      return ctx.stop('skipped', `every refund of order ${orderId} is already in its listOfRefundProcessed`);

    const exported: string[] = [];
    let tag: string | undefined;
    for (const refund of pending) {
      const result = await exportRefund(ctx, api, destination, refund.id, config, `/${refund.legacyResourceId}`);
      if (!result.alreadyProcessed) {
        exported.push(result.refundLegacyId);
        tag = result.tag;
      }
    }
    if (exported.length === 0) return ctx.stop('skipped', `every refund of order ${orderId} was exported meanwhile`);
    return { orderId, exported, tag };
  },
});
