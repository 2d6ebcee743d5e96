import { later, permanent } from '../../engine/errors.ts';
import { defineOperation } from '../../engine/operations.ts';
import { ShopifyAdminApi } from './admin-api.ts';
import { shopifyDestination } from './destination.ts';
import { sendToErp } from './erp.ts';
import { markRefundExported, marksOf, type OrderMarks } from './order-marks.ts';
import { fetchRefund, type GraphqlNode } from './refund-query.ts';
import { assembleRefundRecord, type RefundRecord } from './refund-record.ts';

const REFUND_GID = /^gid:\/\/shopify\/Refund\/\d+$/;

/** What the memoized send step stores: enough to mark the order after a crash without asking again. */
type SendOutcome =
  | { alreadyProcessed: true; refundLegacyId: string; orderId: string }
  | { alreadyProcessed: false; refundLegacyId: string; orderId: string; record: RefundRecord; erp: { status: number; body: unknown }; marks: OrderMarks };

const isSynced = (order: GraphqlNode) => (order.customAttributes as GraphqlNode[]).some((attribute) => attribute.key === 'orderSynced' && attribute.value === 'TRUE');

/**
 * The seed's deprecated refund operation. One refund, from a `refunds/create` webhook: read it from
 * Shopify, send the seed's Refund record to the ERP once, then mark the order. The send and the
 * marking are memoized steps, so a retry or a crash after the ERP accepted the record never sends
 * it again; the order's processed-refunds list keeps redeliveries and later runs out.
 */
export const refundSyncToErp = defineOperation({
  name: 'shopify.refund-sync-to-erp',
  title: '[DEPRECATED] - Refund sync to ERP',
  description:
    'Reads the refund named by a Shopify refunds/create webhook, sends the Refund record to the ERP with token-based authentication, ' +
    'then adds the refund to the order\'s refundProcessed.listOfRefundProcessed metafield and sets the tag "IPaaS Refunds Exported: <count>". ' +
    'A refund already in that list ends the run as skipped.',
  deprecated: { successor: 'shopify.orders-import-list' },
  sideEffects: true,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['destination'],
    properties: {
      destination: { type: 'string', minLength: 1, description: 'Name of a destination of type shopify.' },
      refundId: { type: 'string', description: 'The refund\'s GID; by default the webhook\'s admin_graphql_api_id.' },
      requireOrderSynced: {
        type: 'boolean', default: true,
        description: 'Wait until the order carries the custom attribute orderSynced = TRUE (the ERP knows the order) before sending its refund.',
      },
      orderSyncWaitMinutes: { type: 'integer', minimum: 0, maximum: 10_080, default: 1440, description: 'How long a refund waits for its order, from its arrival.' },
      orderSyncRecheckSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 300, description: 'How often the order is checked again meanwhile.' },
    },
  },
  async run(ctx) {
    const { config } = ctx;
    const refundId = config.refundId ?? (ctx.input.body as { admin_graphql_api_id?: unknown } | null)?.admin_graphql_api_id;
    if (typeof refundId !== 'string' || !REFUND_GID.test(refundId)) {
      throw permanent('the message names no refund: expected admin_graphql_api_id like gid://shopify/Refund/123', { details: { refundId: refundId ?? null } });
    }
    const destination = shopifyDestination(await ctx.destination(config.destination));
    const api = new ShopifyAdminApi(destination.shop, ctx.signal);

    const sent = await ctx.step('send-to-erp', async (): Promise<SendOutcome> => {
      const data = await fetchRefund(api, refundId);
      if (!data) throw permanent(`refund ${refundId} does not exist in the shop`);
      const { refund } = data;
      const refundLegacyId = String(refund.legacyResourceId);
      const orderId: string = refund.order.id;
      const marks = marksOf(refund.order);
      if (marks.processed.includes(refundLegacyId)) return { alreadyProcessed: true, refundLegacyId, orderId };
      if ((config.requireOrderSynced ?? true) && !isSynced(refund.order)) {
        const waitedMs = Date.now() - Date.parse(ctx.input.receivedAt);
        const windowMinutes = config.orderSyncWaitMinutes ?? 1440;
        if (waitedMs >= windowMinutes * 60_000) {
          throw permanent(`order ${orderId} was not marked orderSynced = TRUE within ${windowMinutes} minutes of the refund's arrival`, { details: { orderId } });
        }
        throw later(`order ${orderId} is not synced to the ERP yet (no orderSynced = TRUE attribute)`, { retryAfterMs: (config.orderSyncRecheckSeconds ?? 300) * 1000 });
      }
      const record = assembleRefundRecord(destination.shop.shopUrl, data);
      const erp = await sendToErp(destination.erp, record, { idempotencyKey: refundId, signal: ctx.signal });
      return { alreadyProcessed: false, refundLegacyId, orderId, record, erp, marks };
    });
    if (sent.alreadyProcessed) {
      return ctx.stop('skipped', `refund ${sent.refundLegacyId} is already in the order's listOfRefundProcessed: not sent again`);
    }
    const marks = await ctx.step('mark-order', () => markRefundExported(api, sent.orderId, sent.refundLegacyId, sent.marks));
    // The record itself stays in the send step's checkpoint (`<node>/send-to-erp`): a large refund's
    // record must not push the node's output over its size limit after the ERP already took it.
    return { refundId, refundLegacyId: sent.refundLegacyId, orderId: sent.orderId, erp: sent.erp, processedRefunds: marks.processed, tag: marks.tag };
  },
});
