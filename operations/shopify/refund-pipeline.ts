import { later, permanent } from '../../engine/model/index.ts';
import type { OperationContext } from '../../engine/plugins/index.ts';
import type { ShopifyAdminApi } from './admin-api.ts';
import type { ShopifyDestination } from './destination.ts';
import { MASK } from '../../engine/secrets/index.ts';
import { erpRequest, sendToErp } from './erp.ts';
import { EXPORTED_TAG_PREFIX, markRefundExported, marksOf, type OrderMarks } from './order-marks.ts';
import { fetchRefund, refundSizesOf, type GraphqlNode } from './refund-query.ts';
import { assembleRefundRecord, type RefundRecord } from './refund-record.ts';

/** How long a refund waits for its order to reach the ERP (the order's custom attribute orderSynced = TRUE). */
export interface OrderSyncGate {
  requireOrderSynced?: boolean;
  orderSyncWaitMinutes?: number;
  orderSyncRecheckSeconds?: number;
}

/** The config fields of the gate, shared by the operations that export refunds. */
export const orderSyncGateSchema = {
  requireOrderSynced: {
    type: 'boolean',
    default: true,
    description:
      'Wait until the order carries the custom attribute orderSynced = TRUE (the ERP knows the order) before sending ' +
      'its refunds.',
  },
  orderSyncWaitMinutes: {
    type: 'integer',
    minimum: 0,
    maximum: 10_080,
    default: 1440,
    description: "How long a refund waits for its order, from the message's arrival.",
  },
  orderSyncRecheckSeconds: {
    type: 'integer',
    minimum: 1,
    maximum: 86_400,
    default: 300,
    description: 'How often the order is checked again meanwhile.',
  },
} as const;

const isSynced = (order: GraphqlNode) =>
  (order.customAttributes as GraphqlNode[]).some(
    (attribute) => attribute.key === 'orderSynced' && attribute.value === 'TRUE',
  );

/** Throws `later` while the order is not synced, and `permanent` once the wait is over. */
function awaitOrderSynced(ctx: OperationContext<unknown>, order: GraphqlNode, gate: OrderSyncGate) {
  if (!(gate.requireOrderSynced ?? true) || isSynced(order)) return;
  const windowMinutes = gate.orderSyncWaitMinutes ?? 1440;
  if (Date.now() - Date.parse(ctx.input.receivedAt) >= windowMinutes * 60_000) {
    throw permanent(
      `order ${order.id} was not marked orderSynced = TRUE within ${windowMinutes} minutes of the message's arrival`,
      { details: { orderId: order.id } },
    );
  }
  throw later(`order ${order.id} is not synced to the ERP yet (no orderSynced = TRUE attribute)`, {
    retryAfterMs: (gate.orderSyncRecheckSeconds ?? 300) * 1000,
  });
}

/** What the memoized send step stores: enough to mark the order after a crash without asking again. */
type SendOutcome =
  | { alreadyProcessed: true; refundLegacyId: string; orderId: string }
  | {
      alreadyProcessed: false;
      refundLegacyId: string;
      orderId: string;
      record: RefundRecord;
      erp: { status: number; body: unknown };
      marks: OrderMarks;
    };

export type RefundExport =
  | { alreadyProcessed: true; refundLegacyId: string; orderId: string }
  | {
      alreadyProcessed: false;
      refundLegacyId: string;
      orderId: string;
      erp: { status: number; body: unknown };
      processedRefunds: string[];
      tag: string;
    };

/**
 * Exports one refund exactly once: read it (with its order and return), skip it if the order's
 * processed list has it, wait for the order to be synced, assemble and validate the record, send it
 * to the ERP, then mark the order. The send and the marking are memoized sub-steps (`send-to-erp`,
 * `mark-order`, suffixed by `stepSuffix` when one node exports several refunds), so a retry or a
 * crash after the ERP accepted the record never sends it again.
 */
/** Reads the refund and decides: exported before, or the record to send (once its order is synced). */
async function prepareRefundExport(
  ctx: OperationContext<unknown>,
  api: ShopifyAdminApi,
  destination: ShopifyDestination,
  refundId: string,
  gate: OrderSyncGate,
): Promise<
  | { alreadyProcessed: true; refundLegacyId: string; orderId: string }
  | { alreadyProcessed: false; refundLegacyId: string; orderId: string; record: RefundRecord; marks: OrderMarks }
> {
  // A refunds/create webhook about this refund says how many lines it has: the query asks for that many.
  const data = await fetchRefund(api, refundId, refundSizesOf(ctx.input.body, refundId));
  if (!data) throw permanent(`refund ${refundId} does not exist in the shop`);
  const { refund } = data;
  const refundLegacyId = String(refund.legacyResourceId);
  const orderId: string = refund.order.id;
  const marks = marksOf(refund.order);
  if (marks.processed.includes(refundLegacyId)) return { alreadyProcessed: true, refundLegacyId, orderId };
  awaitOrderSynced(ctx, refund.order, gate);
  return {
    alreadyProcessed: false,
    refundLegacyId,
    orderId,
    record: assembleRefundRecord(destination.shop.shopUrl, data),
    marks,
  };
}

/**
 * What exporting the refund would do, for dry runs: the ERP request (its credentials masked) and
 * how the order would be marked — or that it was exported before. Reads the shop; sends nothing.
 */
export async function previewRefundExport(
  ctx: OperationContext<unknown>,
  api: ShopifyAdminApi,
  destination: ShopifyDestination,
  refundId: string,
  gate: OrderSyncGate,
) {
  const prepared = await prepareRefundExport(ctx, api, destination, refundId, gate);
  if (prepared.alreadyProcessed) return { refundId, alreadyExported: true, orderId: prepared.orderId };
  const request = erpRequest(destination.erp, prepared.record, refundId);
  const processed = [...prepared.marks.processed, prepared.refundLegacyId];
  return {
    refundId,
    erp: { ...request, headers: { ...request.headers, authorization: MASK } },
    markOrder: {
      orderId: prepared.orderId,
      listOfRefundProcessed: processed,
      tag: `${EXPORTED_TAG_PREFIX}${processed.length}`,
    },
  };
}

export async function exportRefund(
  ctx: OperationContext<unknown>,
  api: ShopifyAdminApi,
  destination: ShopifyDestination,
  refundId: string,
  gate: OrderSyncGate,
  stepSuffix = '',
): Promise<RefundExport> {
  const sent = await ctx.step(`send-to-erp${stepSuffix}`, async (): Promise<SendOutcome> => {
    const prepared = await prepareRefundExport(ctx, api, destination, refundId, gate);
    const { refundLegacyId, orderId } = prepared;
    if (prepared.alreadyProcessed) {
      ctx.logger.info({ refundId, orderId }, `refund ${refundLegacyId} was exported before: nothing sent`);
      return prepared;
    }
    const erp = await sendToErp(destination.erp, prepared.record, {
      idempotencyKey: refundId,
      http: ctx.http,
      signal: ctx.signal,
    });
    ctx.logger.info({ refundId, orderId, erpStatus: erp.status }, `refund ${refundLegacyId} sent to the ERP`);
    return { ...prepared, erp };
  });
  if (sent.alreadyProcessed) return sent;
  if (ctx.testRun) {
    // A test run leaves the order as it is: a later real run must not take the refund for exported.
    return {
      alreadyProcessed: false,
      refundLegacyId: sent.refundLegacyId,
      orderId: sent.orderId,
      erp: sent.erp,
      processedRefunds: sent.marks.processed,
      tag: '(not marked: test run)',
    };
  }
  const marks = await ctx.step(`mark-order${stepSuffix}`, () =>
    markRefundExported(api, sent.orderId, sent.refundLegacyId, sent.marks),
  );
  ctx.logger.info({ orderId: sent.orderId, tag: marks.tag }, `order marked: refund ${sent.refundLegacyId} exported`);
  // The record stays in the send step's checkpoint: a large record must not push the node's output
  // over its size limit after the ERP already took it.
  return {
    alreadyProcessed: false,
    refundLegacyId: sent.refundLegacyId,
    orderId: sent.orderId,
    erp: sent.erp,
    processedRefunds: marks.processed,
    tag: marks.tag,
  };
}
