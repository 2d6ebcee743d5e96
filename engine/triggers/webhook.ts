import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookTriggerConfig } from '../flow/schema.ts';

export type Headers = Record<string, string | string[] | undefined>;

/** Equal-time comparison that first checks lengths (timingSafeEqual throws on a length mismatch). */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const left = typeof a === 'string' ? Buffer.from(a) : a;
  const right = typeof b === 'string' ? Buffer.from(b) : b;
  return left.length === right.length && timingSafeEqual(left, right);
}

export function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

type Verify = WebhookTriggerConfig['verify'];

/** The header a verification reads its proof from. */
export function verificationHeader(verify: Verify): string | undefined {
  if (!verify || verify.type === 'none') return undefined;
  return verify.type === 'shopify' ? 'x-shopify-hmac-sha256' : verify.header.toLowerCase();
}

/** Names of the secret variables a verification needs (the current one first). */
export function verificationSecretNames(verify: Verify): string[] {
  if (!verify || verify.type === 'none') return [];
  return verify.type === 'shopify' && verify.previousSecret ? [verify.secret, verify.previousSecret] : [verify.secret];
}

/** Headers senders name a delivery's topic in (Shopify's first); what topics are blocked by. */
const TOPIC_HEADERS = ['x-shopify-topic', 'x-topic', 'x-event-type'];

export function topicOf(headers: Headers): string | null {
  for (const name of TOPIC_HEADERS) {
    const value = headerValue(headers, name);
    if (value) return value.slice(0, 200);
  }
  return null;
}

/** The header carrying the sender's delivery id, when the sender has one. */
export function deliveryIdHeader(config: WebhookTriggerConfig): string | undefined {
  return config.deliveryIdHeader ?? (config.verify?.type === 'shopify' ? 'x-shopify-webhook-id' : undefined);
}

/**
 * Whether a delivery proves its origin as the trigger requires. `secretValues` are the values of
 * the verification's secrets; any of them may have signed (the previous one, during a rotation).
 */
export function verifyDelivery(
  verify: Verify,
  rawBody: Buffer,
  headers: Headers,
  secretValues: readonly string[],
): boolean {
  if (!verify || verify.type === 'none') return true;
  const presented = headerValue(headers, verificationHeader(verify)!);
  if (presented === undefined || secretValues.length === 0) return false;
  if (verify.type === 'header') return secretValues.some((secret) => constantTimeEqual(presented, secret));
  const encoding = verify.type === 'shopify' ? 'base64' : (verify.encoding ?? 'hex');
  const prefix = verify.type === 'shopify' ? '' : (verify.prefix ?? '');
  if (!presented.startsWith(prefix)) return false;
  const digest = presented.slice(prefix.length);
  return secretValues.some((secret) =>
    constantTimeEqual(digest, createHmac('sha256', secret).update(rawBody).digest(encoding)),
  );
}

/** Headers that carry credentials or proofs by their name: never stored, shown or given to a run. */
const NEVER_KEPT = /authorization|cookie|api-?key|token|secret|password|signature|hmac/i;

/** The headers kept with a message: lower-case names, no credentials, no verification header. */
export function keptHeaders(headers: Headers, verify: Verify): Record<string, string> {
  const dropped = verificationHeader(verify);
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NEVER_KEPT.test(name) || name === dropped) continue;
    kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}
