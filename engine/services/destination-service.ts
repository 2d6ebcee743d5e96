import { type Destination, ValidationError } from '../model/index.ts';
import { type HttpClient, unreachableFromOutside } from '../outbound/index.ts';
import {
  type DestinationType,
  type OpenedDestination,
  openDestination,
  putDestination,
  type WebhookSubscriber,
  type WebhookSubscription,
} from '../plugins/index.ts';
import type { Keyring } from '../secrets/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import type { NamedRecords } from './named-records.ts';
import { found } from './references.ts';

/** What the operation families declare about destinations, and where flow URLs are reached from. */
export interface DestinationKinds {
  /** The destination types, by type. */
  types: Record<string, DestinationType>;
  /** Per destination type: who registers flow URLs as webhooks there. */
  subscribers: Record<string, WebhookSubscriber>;
  /** The public base URL flow URLs start with (known once the server listens). */
  baseUrl(): string;
}

/** Where a flow's deliveries of a topic would come from, checked: the destination and the flow URL. */
export interface WebhookTarget {
  destination: OpenedDestination;
  subscriber: WebhookSubscriber;
  uri: string;
  topic: string;
}

/**
 * Destinations: the outside accounts a tenant's flows send to (a shop, an ERP), their settings shown and their
 * credentials sealed and write-only; and flow URLs registered as webhooks there.
 */
export class DestinationService implements NamedRecords<Destination> {
  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    private readonly http: HttpClient,
    private readonly kinds: DestinationKinds,
  ) {}

  /** Created or replaced from every field of its type, credentials included (field errors from `$`). */
  put(tenantId: string, name: string, given: Record<string, unknown> & { type: string }) {
    const { store, keyring, http } = this;
    return putDestination({ store, keyring, http }, tenantId, name, this.kinds.types[given.type], given, '$');
  }

  list(tenantId: string, page: PageRequest): Promise<Page<Destination>> {
    return this.store.listDestinations(tenantId, page);
  }

  get(tenantId: string, name: string): Promise<Destination | undefined> {
    return this.store.getDestination(tenantId, name);
  }

  remove(tenantId: string, name: string): Promise<boolean> {
    return this.store.deleteDestination(tenantId, name);
  }

  /**
   * Where a flow's deliveries of `topic` would come from: the destination, its family's subscriber and the flow
   * URL. Field errors name `$.flowId` and `$.topic`; a destination that does not exist is not found.
   */
  async webhookTarget(
    tenantId: string,
    name: string,
    { flowId, topic }: { flowId: string; topic: string },
  ): Promise<WebhookTarget> {
    const flow = await this.store.getFlow(tenantId, flowId);
    if (!flow) throw new ValidationError('Unknown flow', [{ path: '$.flowId', message: `no flow ${flowId}` }]);
    const destination = found(`destination ${name}`, await openDestination(this.store, this.keyring, tenantId, name));
    const subscriber = this.kinds.subscribers[destination.type];
    if (!subscriber?.topics.includes(topic)) {
      throw new ValidationError('Unsupported topic', [
        { path: '$.topic', message: `a ${destination.type} destination cannot subscribe to ${topic}` },
      ]);
    }
    const uri = `${this.kinds.baseUrl()}/hooks/${encodeURIComponent(tenantId)}/${encodeURIComponent(flow.key)}`;
    return { destination, subscriber, uri, topic };
  }

  /**
   * The flow URL registered in the destination's system as the receiver of the topic, with warnings (an address
   * that system cannot reach). What that system refuses comes as its family says (a 400 naming `$.uri`, a 502).
   */
  async subscribe(
    tenantId: string,
    { destination, subscriber, uri, topic }: WebhookTarget,
  ): Promise<WebhookSubscription & { warnings?: string[] }> {
    const subscription = await subscriber.subscribe(destination, { uri, topic }, this.http.forTenant(tenantId));
    const unreachable = unreachableFromOutside(new URL(uri));
    if (!unreachable) return subscription;
    const warning = `${new URL(uri).hostname} is ${unreachable}: ${destination.type} cannot deliver to it; set PUBLIC_URL to an address it can reach`;
    return { ...subscription, warnings: [warning] };
  }
}
