import { permanent, ValidationError } from '../../engine/model/index.ts';
import type { WebhookSubscriber } from '../../engine/plugins/index.ts';
import type { WebhookSignature } from '../../engine/triggers/index.ts';
import { ShopifyAdminApi } from './admin-api.ts';
import { shopifyDestination, SUPPORTED_API_VERSIONS } from './destination.ts';

const SUBSCRIBE = `mutation SubscribeWebhook(
  $topic: WebhookSubscriptionTopic!
  $subscription: WebhookSubscriptionInput!
) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: $subscription) {
    webhookSubscription { id topic uri apiVersion { handle } }
    userErrors { field message }
  }
}`;

export const webhookDocuments = [SUBSCRIBE];

interface SubscribePayload {
  webhookSubscription: { id: string; uri: string; apiVersion: { handle: string } } | null;
  userErrors: Array<{ field?: string[] | null; message: string }>;
}

/**
 * The webhook set up by hand in the shop's admin, in one call: `webhookSubscriptionCreate` with format JSON. Shopify
 * gives the subscription the API version of the call, i.e. the destination's `apiVersion`.
 */
export const shopifyWebhooks: WebhookSubscriber = {
  topics: ['refunds/create'],
  apiVersions: SUPPORTED_API_VERSIONS,
  async subscribe(destination, { uri, topic }, http) {
    if (new URL(uri).protocol !== 'https:') {
      throw new ValidationError('Shopify delivers webhooks only to https addresses', [
        {
          path: '$.uri',
          message:
            `is ${uri}: set PUBLIC_URL to the https address at which Shopify reaches this server ` +
            '(a proxy or tunnel)',
        },
      ]);
    }
    const { shop } = shopifyDestination(destination);
    const { webhookSubscriptionCreate: created } = await new ShopifyAdminApi(shop, http).query<{
      webhookSubscriptionCreate: SubscribePayload | null;
    }>(SUBSCRIBE, {
      topic: topic.toUpperCase().replace(/\//g, '_'),
      subscription: { uri, format: 'JSON' },
    });
    if (!created) throw permanent(`Shopify answered webhookSubscriptionCreate with ${JSON.stringify(created)}`);
    if (created.userErrors.length > 0) {
      throw new ValidationError(
        'Shopify refused the subscription',
        created.userErrors.map((error) => ({
          path: `$.${(error.field ?? []).join('.') || 'webhookSubscription'}`,
          message: error.message,
        })),
      );
    }
    const subscription = created.webhookSubscription;
    if (!subscription)
      throw permanent('Shopify answered webhookSubscriptionCreate with neither a subscription nor errors');
    return { id: subscription.id, topic, uri: subscription.uri, apiVersion: subscription.apiVersion.handle };
  },
};

/**
 * How Shopify signs its webhooks: HMAC-SHA256 of the raw body with the app's client secret, base64,
 * in X-Shopify-Hmac-Sha256; X-Shopify-Webhook-Id names the delivery, X-Shopify-Topic its topic.
 */
export const shopifyWebhookSignature: WebhookSignature = {
  type: 'shopify',
  description:
    "Shopify: HMAC-SHA256 of the raw body with the app's client secret, base64, in X-Shopify-Hmac-Sha256; deliveries " +
    'are deduplicated on X-Shopify-Webhook-Id, and X-Shopify-Topic names the topic.',
  header: 'x-shopify-hmac-sha256',
  encoding: 'base64',
  deliveryIdHeader: 'x-shopify-webhook-id',
  topicHeader: 'x-shopify-topic',
  keptHeaders: ['x-shopify-shop-domain', 'x-shopify-api-version', 'x-shopify-triggered-at', 'x-shopify-event-id'],
};
