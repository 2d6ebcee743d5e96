import type { JSONSchema } from 'json-schema-to-ts';
import { permanent } from '../../engine/model/index.ts';
import type { OpenedDestination, OperationContext } from '../../engine/plugins/index.ts';
import { ShopifyAdminApi, type ShopAccess } from './admin-api.ts';
import type { ShopifyCredentials, ShopifySettings } from './destination-type.ts';
import type { ErpAccess } from './erp.ts';

/** Admin API versions the operations are tested against (the simulator serves their real schemas). */
export const SUPPORTED_API_VERSIONS = ['2025-10', '2026-10'] as const;

/** The Admin API version used when a destination names none. */
export const DEFAULT_API_VERSION = SUPPORTED_API_VERSIONS[0];

export interface ShopifyDestination {
  shop: ShopAccess;
  erp: ErpAccess;
}

/** A destination of type `shopify` (see destination-type.ts), as the operations use it. */
export function shopifyDestination(destination: OpenedDestination): ShopifyDestination {
  if (destination.type !== 'shopify')
    throw permanent(`destination "${destination.name}" is of type ${destination.type}, not shopify`);
  const settings = destination.settings as ShopifySettings;
  const credentials = destination.credentials as ShopifyCredentials;
  return {
    shop: {
      shopUrl: settings.graphqlUrl,
      apiVersion: settings.apiVersion ?? DEFAULT_API_VERSION,
      accessToken: credentials.adminApiAccessToken,
      clientId: credentials.clientId,
      clientSecret: credentials.clientSecret,
    },
    erp: {
      apiUrl: settings.erp.apiUrl,
      accountId: settings.erp.accountId,
      concurrency: settings.erp.limits?.concurrency,
      ratePerSecond: settings.erp.limits?.ratePerSecond,
      ...credentials.erp,
    },
  };
}

/** The config schema of a Shopify operation: the destination it names, and its own properties. */
export function shopifyConfigSchema<const Properties extends Record<string, JSONSchema>>(properties: Properties) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['destination'],
    properties: {
      destination: { type: 'string', minLength: 1, description: 'Name of a destination of type shopify.' },
      ...properties,
    },
  } as const;
}

/** The run's destination, and a client of its shop bound to the node's abort signal. */
export async function openShop(
  ctx: OperationContext<unknown>,
  name: string,
): Promise<{ destination: ShopifyDestination; api: ShopifyAdminApi }> {
  const destination = shopifyDestination(await ctx.destination(name));
  return { destination, api: new ShopifyAdminApi(destination.shop, ctx.http, ctx.signal) };
}
