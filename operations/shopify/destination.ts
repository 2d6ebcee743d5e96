import { permanent } from '../../engine/errors.ts';
import type { OpenedDestination } from '../../engine/operations.ts';
import type { ShopAccess } from './admin-api.ts';
import type { ErpAccess } from './erp.ts';

/** The Admin API version used when a destination names none. */
export const DEFAULT_API_VERSION = '2025-10';

export interface ShopifyDestination {
  shop: ShopAccess;
  erp: ErpAccess;
}

/** A destination of type `shopify` (see the Destination schema in api/routes/destinations.ts), as the operations use it. */
export function shopifyDestination(destination: OpenedDestination): ShopifyDestination {
  if (destination.type !== 'shopify') throw permanent(`destination "${destination.name}" is of type ${destination.type}, not shopify`);
  const settings = destination.settings as { graphqlUrl: string; apiVersion?: string; erp: { apiUrl: string; accountId: string } };
  const credentials = destination.credentials as {
    adminApiAccessToken?: string; clientId?: string; clientSecret?: string;
    erp: { consumerKey: string; consumerSecret: string; tokenId: string; tokenSecret: string };
  };
  return {
    shop: {
      shopUrl: settings.graphqlUrl, apiVersion: settings.apiVersion ?? DEFAULT_API_VERSION,
      accessToken: credentials.adminApiAccessToken, clientId: credentials.clientId, clientSecret: credentials.clientSecret,
    },
    erp: { apiUrl: settings.erp.apiUrl, accountId: settings.erp.accountId, ...credentials.erp },
  };
}
