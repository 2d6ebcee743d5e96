import type { OperationDefinition, WebhookSubscriber, DestinationType } from '../engine/plugins/index.ts';
import { coreOperations } from './core/index.ts';
import { dataSpaceOperations } from './dataspace/index.ts';
import type { WebhookSignature } from '../engine/triggers/index.ts';
import {
  shopifyDestinationType,
  shopifyOperations,
  shopifyWebhookSignature,
  shopifyWebhooks,
} from './shopify/index.ts';

/** Every operation family this build ships. */
export const allOperations: OperationDefinition<unknown>[] = [
  ...coreOperations,
  ...dataSpaceOperations,
  ...shopifyOperations,
];

/** Who registers webhooks for each destination type. */
export const webhookSubscribers: Record<string, WebhookSubscriber> = { shopify: shopifyWebhooks };

/** How the vendors of these families sign the webhooks they deliver (a trigger's `verify.type`). */
export const webhookSignatures: WebhookSignature[] = [shopifyWebhookSignature];

/** The destination types these families configure, by type. */
export const destinationTypes: Record<string, DestinationType> = { shopify: shopifyDestinationType };
