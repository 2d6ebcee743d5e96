import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ApiClient } from './harness.ts';
import { ErpSimulator, type ErpCredentials } from './erp-simulator.ts';
import { ShopifySimulator, type ShopifySimulatorOptions } from './shopify-simulator.ts';

/** The secret Shopify signs webhooks with (the app's client secret), as the tests' tenants store it. */
export const WEBHOOK_SECRET = 'shpss_simulated-client-secret';
export const SHOP_TOKEN = 'shpat_simulated-admin-token';
export const ERP_CREDENTIALS: ErpCredentials = {
  consumerKey: 'ck-ef40afdd8abaac111b13825dd5e5e2dd',
  consumerSecret: 'cs-d26ad321a4b2f23b0741c8d38392ce01',
  tokenId: 'tk-2b0ce516420110bcbd36b69e99196d1b',
  tokenSecret: 'ts-c29a677df7d5439a458c063654187e3d',
  // A sandbox account in lower case: the realm must still go out upper case.
  accountId: '1234567_sb1',
};
export const APP_CLIENT = { clientId: 'simulated-app-client-id', clientSecret: 'simulated-app-client-secret' };

/** The example flow document from flows/, with test-friendly pacing. */
export function refundFlow(key: string, config: Record<string, unknown> = {}) {
  const document = JSON.parse(
    readFileSync(path.resolve(import.meta.dirname, '../../flows/refund-sync-to-erp.json'), 'utf8'),
  );
  document.key = key;
  document.nodes[0].config = { ...document.nodes[0].config, ...config };
  document.nodes[0].retry = { maxAttempts: 4, backoffMs: 100 };
  return document;
}

/** flows/orders-import-list.json polling every second (for tests). */
export function importFlowDocument(importConfig: Record<string, unknown> = {}) {
  const document = JSON.parse(
    readFileSync(path.resolve(import.meta.dirname, '../../flows/orders-import-list.json'), 'utf8'),
  );
  document.trigger.config = { every: '1s' };
  document.nodes[0].config = { ...document.nodes[0].config, ...importConfig };
  document.nodes[1].retry = { maxAttempts: 3, backoffMs: 100 };
  document.nodes[1].timeoutMs = 30_000;
  return document;
}

/** A simulated shop and ERP, and a tenant configured for them (secret, destination "shop"). */
export async function refundWorld(
  tenant: ApiClient,
  options: {
    apiVersion?: string;
    destination?: string;
    clientCredentials?: boolean;
    shop?: ShopifySimulatorOptions;
  } = {},
) {
  const shopify = await new ShopifySimulator({ accessToken: SHOP_TOKEN, ...APP_CLIENT, ...options.shop }).start();
  const erp = await new ErpSimulator(ERP_CREDENTIALS).start();
  await tenant.call('PUT', '/api/v1/secret-global-variables/SHOPIFY_CLIENT_SECRET', { value: WEBHOOK_SECRET });
  const { consumerKey, consumerSecret, tokenId, tokenSecret, accountId } = ERP_CREDENTIALS;
  const shopAccess = options.clientCredentials ? APP_CLIENT : { adminApiAccessToken: SHOP_TOKEN };
  const put = await tenant.call('PUT', `/api/v1/destinations/${options.destination ?? 'shop'}`, {
    type: 'shopify',
    operation: 'shopify.refund-sync-to-erp',
    graphqlUrl: shopify.url,
    ...(options.apiVersion ? { apiVersion: options.apiVersion } : {}),
    ...shopAccess,
    erp: { apiUrl: erp.apiUrl, consumerKey, consumerSecret, tokenId, tokenSecret, accountId },
  });
  if (put.status !== 201 && put.status !== 200) throw new Error(`destination: ${put.text}`);
  return {
    shopify,
    erp,
    /** Shopify delivers the refund's webhook to the tenant's flow. */
    deliver: async (platformUrl: string, flowKey: string, webhookBody: string, webhookId?: string) => {
      const answer = await shopify.deliverWebhook(`${platformUrl}/hooks/${tenant.tenantId}/${flowKey}`, {
        topic: 'refunds/create',
        body: webhookBody,
        secret: WEBHOOK_SECRET,
        webhookId,
      });
      return { status: answer.status, body: answer.body ? JSON.parse(answer.body) : undefined };
    },
    close: async () => {
      await shopify.close();
      await erp.close();
    },
  };
}
