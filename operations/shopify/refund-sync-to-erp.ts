import type { FromSchema } from 'json-schema-to-ts';
import { permanent } from '../../engine/model/index.ts';
import { defineOperation, type OperationContext } from '../../engine/plugins/index.ts';
import { openShop, shopifyConfigSchema } from './destination.ts';
import { exportRefund, orderSyncGateSchema, previewRefundExport } from './refund-pipeline.ts';

export const REFUND_GID = /^gid:\/\/shopify\/Refund\/\d+$/;

const configSchema = shopifyConfigSchema({
  refundId: { type: 'string', description: "The refund's GID; by default the webhook's admin_graphql_api_id." },
  ...orderSyncGateSchema,
});

type RefundSyncConfig = FromSchema<typeof configSchema>;

/**
 * The deprecated refund operation (docs/glossary.md). One refund, from a `refunds/create` webhook: read it from
 * Shopify, send the Refund record to the ERP once, then mark the order. The send and the
 * marking are memoized steps, so a retry or a crash after the ERP accepted the record never sends
 * it again; the order's processed-refunds list keeps redeliveries and later runs out.
 */
export const refundSyncToErp = defineOperation({
  name: 'shopify.refund-sync-to-erp',
  title: '[DEPRECATED] - Refund sync to ERP',
  description:
    'Reads the refund named by a Shopify refunds/create webhook, sends the Refund record to the ERP with token-based ' +
    "authentication, then adds the refund to the order's refundProcessed.listOfRefundProcessed metafield and sets " +
    'the tag "IPaaS Refunds Exported: <count>". A refund already in that list ends the run as skipped.',
  deprecated: { successor: 'shopify.orders-import-list' },
  version: '1.0.0',
  sideEffects: true,
  configSchema,
  async preview(ctx: OperationContext<RefundSyncConfig>) {
    const refundId = refundIdOf(ctx);
    const { destination, api } = await openShop(ctx, ctx.config.destination);
    return previewRefundExport(ctx, api, destination, refundId, ctx.config);
  },
  async run(ctx) {
    const { config } = ctx;
    const refundId = refundIdOf(ctx);
    const { destination, api } = await openShop(ctx, config.destination);

    const exported = await exportRefund(ctx, api, destination, refundId, config);
    if (exported.alreadyProcessed) {
      return ctx.stop(
        'skipped',
        `refund ${exported.refundLegacyId} is already in the order's listOfRefundProcessed: not sent again`,
      );
    }
    return { refundId, ...exported };
  },
});

/** The refund to export: the config's, or the webhook's admin_graphql_api_id. */
function refundIdOf(ctx: OperationContext<RefundSyncConfig>): string {
  const refundId =
    ctx.config.refundId ?? (ctx.input.body as { admin_graphql_api_id?: unknown } | null)?.admin_graphql_api_id;
  if (typeof refundId !== 'string' || !REFUND_GID.test(refundId)) {
    throw permanent('the message names no refund: expected admin_graphql_api_id like gid://shopify/Refund/123', {
      details: { refundId: refundId ?? null },
    });
  }
  return refundId;
}
