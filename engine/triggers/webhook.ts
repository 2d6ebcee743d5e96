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

/**
 * Whether a delivery proves its origin as the trigger requires. `secret` yields the named secret's
 * current value (and, during a rotation, previous ones); any of them may sign.
 */
export function verifyDelivery(
  verify: WebhookTriggerConfig['verify'],
  rawBody: Buffer,
  headers: Headers,
  secretValues: readonly string[],
): boolean {
  if (!verify || verify.type === 'none') return true;
  const presented = headerValue(headers, verify.header);
  if (presented === undefined || secretValues.length === 0) return false;
  if (verify.type === 'header') return secretValues.some((secret) => constantTimeEqual(presented, secret));
  const prefix = verify.prefix ?? '';
  if (!presented.startsWith(prefix)) return false;
  const digest = presented.slice(prefix.length);
  return secretValues.some((secret) => constantTimeEqual(digest, createHmac('sha256', secret).update(rawBody).digest(verify.encoding ?? 'hex')));
}

const NEVER_KEPT = new Set(['authorization', 'cookie', 'proxy-authorization']);

/** The headers kept with a message: lower-case names, no credentials, no verification header. */
export function keptHeaders(headers: Headers, verify: WebhookTriggerConfig['verify']): Record<string, string> {
  const dropped = verify && verify.type !== 'none' ? verify.header.toLowerCase() : undefined;
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NEVER_KEPT.has(name) || name === dropped) continue;
    kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}
