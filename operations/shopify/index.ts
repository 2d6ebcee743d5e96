import { defineFamily } from '../../engine/plugins/index.ts';
import { adapterKeyRoute, adapterRoute } from './adapter-route.ts';
import { shopifyDestinationType } from './destination-type.ts';
import { ordersImportList } from './orders-import-list.ts';
import { refundExport } from './refund-export.ts';
import { refundSyncToErp } from './refund-sync-to-erp.ts';
import { restCallLimit } from './rest-call-limit.ts';
import { shopifyWebhookSignature, shopifyWebhooks } from './webhooks.ts';

/**
 * Shopify: orders imported, refunds sent to an ERP, its webhooks verified and subscribed, its destinations, and the
 * deprecated HTTP adapter's routes; its REST answers' call limit prices requests to a shop.
 */
export const shopifyFamily = defineFamily({
  name: 'shopify',
  operations: [refundSyncToErp, ordersImportList, refundExport],
  webhookSignature: shopifyWebhookSignature,
  destination: { type: shopifyDestinationType, subscriber: shopifyWebhooks },
  routes: [adapterRoute, adapterKeyRoute],
  answerPricer: restCallLimit,
});
