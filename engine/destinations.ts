import { destinationContext, type Keyring } from './secrets/keyring.ts';
import type { Store } from './store/port.ts';

/** A destination with its credentials opened, for the run or request that uses it. */
export interface OpenedDestination {
  name: string;
  type: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown>;
}

export async function openDestination(
  store: Store,
  keyring: Keyring,
  tenantId: string,
  name: string,
): Promise<OpenedDestination | undefined> {
  const found = await store.getSealedDestination(tenantId, name);
  if (!found) return undefined;
  const credentials = JSON.parse(keyring.open(found.sealedCredentials, destinationContext(tenantId, name))) as Record<
    string,
    unknown
  >;
  const { destination } = found;
  return {
    name: destination.name,
    type: destination.type,
    settings: destination.settings as Record<string, unknown>,
    credentials,
  };
}

export interface WebhookSubscription {
  /** The subscription's id in the outside system. */
  id: string;
  topic: string;
  uri: string;
  apiVersion: string;
  /** What the subscriber should know, such as an address the outside system plainly cannot reach. */
  warnings?: string[];
}

/**
 * Registers a flow URL for a topic with the system a destination points to (a vendor's own
 * subscription call). Provided by operation families, one per destination type.
 */
export interface WebhookSubscriber {
  topics: readonly string[];
  /** The outside system's API versions the family supports, the default first. */
  apiVersions: readonly string[];
  subscribe(destination: OpenedDestination, request: { uri: string; topic: string }): Promise<WebhookSubscription>;
}
