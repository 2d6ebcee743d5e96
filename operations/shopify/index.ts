import { refundSyncToErp } from './refund-sync-to-erp.ts';

export const shopifyOperations = [refundSyncToErp];
