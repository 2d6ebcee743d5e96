import type { OperationDefinition } from '../engine/operations.ts';
import { coreOperations } from './core/index.ts';
import { dataSpaceOperations } from './dataspace/index.ts';
import type { WebhookSubscriber } from '../engine/destinations.ts';
import { shopifyOperations, shopifyWebhooks } from './shopify/index.ts';

/** Every operation family this build ships. */
export const allOperations: OperationDefinition<unknown>[] = [
  ...coreOperations,
  ...dataSpaceOperations,
  ...shopifyOperations,
];

/** Who registers webhooks for each destination type. */
export const webhookSubscribers: Record<string, WebhookSubscriber> = { shopify: shopifyWebhooks };
