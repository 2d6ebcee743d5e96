import { refundExport } from './refund-export.ts';
import { refundSyncToErp } from './refund-sync-to-erp.ts';
import { shopifyWebhooks } from './webhooks.ts';

export const shopifyOperations = [refundSyncToErp, refundExport];
export { shopifyWebhooks };
