import type { AnswerPricer } from '../outbound/index.ts';
import type { WebhookSignature } from '../triggers/index.ts';
import type { DestinationType, WebhookSubscriber } from './destinations.ts';
import type { FamilyRoute } from './family-routes.ts';
import type { OperationDefinition } from './operations.ts';

/**
 * What an operation family brings, all in one place: its operations and, for a vendor, how it signs the webhooks
 * it delivers, its destination type, who registers flow URLs as webhooks there, and routes of its own. A new vendor is a folder under
 * operations/ with one `defineFamily`, and an entry in the list of families; nothing in engine/, api/ or bin/.
 */
export interface OperationFamily {
  /** A word for logs and docs (`core`, `shopify`). */
  name: string;
  operations: OperationDefinition<unknown>[];
  /** How its vendor signs webhooks (a trigger's `verify.type` names its `type`). */
  webhookSignature?: WebhookSignature;
  /** Its destination type (keyed by `type.type`), and who subscribes flow URLs in that system. */
  destination?: { type: DestinationType; subscriber?: WebhookSubscriber };
  /** HTTP routes of its own, beside the API (a vendor's contract, and the tenant routes that go with it). */
  routes?: FamilyRoute[];
  /**
   * How its vendor's answers say what the account has left (a header of its own), for the outbound budgets of
   * requests that do not read it themselves (an `http.request` node's).
   */
  answerPricer?: AnswerPricer;
}

export const defineFamily = (family: OperationFamily): OperationFamily => family;

/** What the families bring, as the registry, intake and the API take it. */
export interface FamilyParts {
  operations: OperationDefinition<unknown>[];
  webhookSignatures: WebhookSignature[];
  /** By destination type. */
  destinationTypes: Record<string, DestinationType>;
  /** By destination type. */
  webhookSubscribers: Record<string, WebhookSubscriber>;
  routes: FamilyRoute[];
  answerPricers: AnswerPricer[];
}

/** The families' contributions gathered; two families declaring one destination type or signature is an error. */
export function familyParts(families: OperationFamily[]): FamilyParts {
  const parts: FamilyParts = {
    operations: [],
    webhookSignatures: [],
    destinationTypes: {},
    webhookSubscribers: {},
    routes: [],
    answerPricers: [],
  };
  for (const family of families) {
    parts.operations.push(...family.operations);
    if (family.answerPricer) parts.answerPricers.push(family.answerPricer);
    for (const route of family.routes ?? []) {
      if (parts.routes.some((known) => known.method === route.method && known.path === route.path))
        throw new Error(`two families declare the route ${route.method} ${route.path} (the second: ${family.name})`);
      parts.routes.push(route);
    }
    const { webhookSignature: signature, destination } = family;
    if (signature) {
      if (parts.webhookSignatures.some((known) => known.type === signature.type))
        throw new Error(`two families declare the webhook signature ${signature.type} (the second: ${family.name})`);
      parts.webhookSignatures.push(signature);
    }
    if (destination) {
      const { type } = destination.type;
      if (parts.destinationTypes[type]) throw new Error(`two families declare the destination type ${type}`);
      parts.destinationTypes[type] = destination.type;
      if (destination.subscriber) parts.webhookSubscribers[type] = destination.subscriber;
    }
  }
  return parts;
}
