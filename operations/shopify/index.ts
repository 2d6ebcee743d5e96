import { ordersImportList } from './orders-import-list.ts';
import { refundExport } from './refund-export.ts';
import { refundSyncToErp } from './refund-sync-to-erp.ts';
import { shopifyWebhookSignature, shopifyWebhooks } from './webhooks.ts';

export const shopifyOperations = [refundSyncToErp, ordersImportList, refundExport];
export { shopifyDestinationType } from './destination-type.ts';
export { shopifyWebhookSignature, shopifyWebhooks };
