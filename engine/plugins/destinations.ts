import { ValidationError, type FieldError } from '../model/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import { destinationContext, type Keyring } from '../secrets/index.ts';
import type { DestinationStore } from '../store/index.ts';

/** A destination with its credentials opened, for the run or request that uses it. */
export interface OpenedDestination {
  name: string;
  type: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown>;
}

/**
 * A kind of destination, declared by the operation family that uses it: the body that configures one
 * (a JSON Schema with `type: {const}`), and how that body splits into settings, shown as given, and
 * credentials, sealed and never shown again.
 */
export interface DestinationType {
  type: string;
  schema: Record<string, unknown> & { properties: { type: { const: string } } };
  /** What the schema cannot say (one of two ways to sign in, say), with paths under `at`. */
  errors(body: Record<string, unknown>, at: string): FieldError[];
  /** The URLs its operations call, by field path (`erp.apiUrl`): checked against the address policy. */
  addresses(body: Record<string, unknown>): Array<{ path: string; url: string }>;
  split(body: Record<string, unknown>): {
    settings: Record<string, unknown>;
    credentials: Record<string, unknown>;
    /** JSON paths of the credential fields given a value. */
    credentialsSet: string[];
  };
}

/** Creates or replaces a destination from a body its type's schema accepted: settings stored, credentials sealed. */
export async function putDestination(
  { store, keyring, http }: { store: DestinationStore; keyring: Keyring; http: HttpClient },
  tenantId: string,
  name: string,
  type: DestinationType,
  body: Record<string, unknown>,
  at: string,
) {
  const errors = [...type.errors(body, at), ...addressErrors(type, body, at, http)];
  if (errors.length > 0) throw new ValidationError('Invalid destination', errors);
  const { settings, credentials, credentialsSet } = type.split(body);
  return store.putDestination(tenantId, {
    name,
    type: type.type,
    settings,
    credentialsSet,
    sealedCredentials: keyring.seal(JSON.stringify(credentials), destinationContext(tenantId, name)),
  });
}

/**
 * The destination's URLs that are not URLs, or that this deployment's requests would refuse (as far
 * as can be told before resolving names).
 */
function addressErrors(type: DestinationType, body: Record<string, unknown>, at: string, http: HttpClient) {
  return type.addresses(body).flatMap(({ path, url }): FieldError[] => {
    const refusal = http.urlRefusal(url);
    return refusal ? [{ path: `${at}.${path}`, message: refusal }] : [];
  });
}

export async function openDestination(
  store: DestinationStore,
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
  subscribe(
    destination: OpenedDestination,
    request: { uri: string; topic: string },
    http: HttpClient,
  ): Promise<WebhookSubscription>;
}
