import { refundSyncToErp } from './refund-sync-to-erp.ts';
import { shopifyWebhooks } from './webhooks.ts';

export const shopifyOperations = [refundSyncToErp];
export { shopifyWebhooks };
