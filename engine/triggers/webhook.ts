import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FieldError, WebhookTriggerConfig } from '../model/index.ts';
import { traceContextHeaders } from '../telemetry/index.ts';

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
 * How a vendor signs the webhooks it delivers (HMAC-SHA256 of the raw body, keyed with a shared
 * secret), declared by the vendor's operation family: a trigger names it as `verify.type`.
 */
export interface WebhookSignature {
  /** What a trigger's `verify.type` names. */
  type: string;
  description: string;
  /** The header carrying the signature. */
  header: string;
  encoding: 'base64' | 'hex';
  /** The header carrying the vendor's delivery id: repeated deliveries are dropped on it. */
  deliveryIdHeader?: string;
  /** The header naming a delivery's topic: `verify.topic` is checked against it, and topics are blocked by it. */
  topicHeader?: string;
  /** Other headers the vendor sends that are worth keeping with a message (the shop's domain, say). */
  keptHeaders?: string[];
}

/** What a flow URL checks of a delivery, resolved when the flow is compiled (vendor signatures included). */
export interface CompiledWebhook {
  verification:
    | { kind: 'none' }
    | { kind: 'shared-secret'; header: string; secrets: string[] }
    | { kind: 'hmac-sha256'; header: string; encoding: 'base64' | 'hex'; prefix: string; secrets: string[] };
  /** The header carrying the sender's delivery id, when the sender has one. */
  deliveryIdHeader?: string;
  /** Only deliveries whose header names this topic are taken. */
  topic?: { header: string; value: string };
  /** Headers kept with a message besides ORDINARY_HEADERS and the topic headers (lower case). */
  kept: string[];
}

type Verify = NonNullable<WebhookTriggerConfig['verify']>;
type VendorVerify = { type: string; secret: string; previousSecret?: string; topic?: string };

/** A webhook trigger's config as the flow URL applies it; `signature` looks up a vendor's `verify.type`. */
export function compileWebhook(
  config: WebhookTriggerConfig,
  signature: (type: string) => WebhookSignature | undefined,
  at: string,
): { webhook?: CompiledWebhook; errors: FieldError[] } {
  const verify = config.verify as Verify | undefined;
  const deliveryIdHeader = config.deliveryIdHeader?.toLowerCase();
  const declared = (config.keepHeaders ?? []).map((name) => name.toLowerCase());
  const credentials = declared.flatMap((name, index) =>
    NEVER_KEPT.test(name) ? [{ path: `${at}.keepHeaders[${index}]`, message: 'names a credential: never kept' }] : [],
  );
  if (credentials.length > 0) return { errors: credentials };
  const kept = (...names: Array<string | undefined>) =>
    [...new Set([...declared, deliveryIdHeader, ...names].filter((name) => name !== undefined))] as string[];
  if (!verify || verify.type === 'none')
    return { webhook: { verification: { kind: 'none' }, deliveryIdHeader, kept: kept() }, errors: [] };
  if (verify.type === 'header' || verify.type === 'hmac-sha256') {
    const { header, secret } = verify as { header: string; secret: string };
    const hmac = verify as { encoding?: 'base64' | 'hex'; prefix?: string };
    const verification =
      verify.type === 'header'
        ? { kind: 'shared-secret' as const, header: header.toLowerCase(), secrets: [secret] }
        : {
            kind: 'hmac-sha256' as const,
            header: header.toLowerCase(),
            encoding: hmac.encoding ?? 'hex',
            prefix: hmac.prefix ?? '',
            secrets: [secret],
          };
    // A shared secret's header carries the secret itself; a signature is no secret, and shows what was signed.
    const signatureHeader = verification.kind === 'hmac-sha256' ? verification.header : undefined;
    return { webhook: { verification, deliveryIdHeader, kept: kept(signatureHeader) }, errors: [] };
  }
  const vendor = verify as VendorVerify;
  const signed = signature(vendor.type);
  if (!signed)
    return { errors: [{ path: `${at}.verify.type`, message: `names no webhook signature: ${vendor.type}` }] };
  if (vendor.topic && !signed.topicHeader) {
    return { errors: [{ path: `${at}.verify.topic`, message: `${vendor.type} deliveries name no topic` }] };
  }
  const vendorDeliveryId = deliveryIdHeader ?? signed.deliveryIdHeader?.toLowerCase();
  return {
    errors: [],
    webhook: {
      kept: kept(
        signed.header.toLowerCase(),
        vendorDeliveryId,
        signed.topicHeader?.toLowerCase(),
        ...(signed.keptHeaders ?? []).map((name) => name.toLowerCase()),
      ),
      // During a rotation the sender may still sign with the previous secret.
      verification: {
        kind: 'hmac-sha256',
        header: signed.header.toLowerCase(),
        encoding: signed.encoding,
        prefix: '',
        secrets: vendor.previousSecret ? [vendor.secret, vendor.previousSecret] : [vendor.secret],
      },
      deliveryIdHeader: vendorDeliveryId,
      topic:
        vendor.topic && signed.topicHeader
          ? { header: signed.topicHeader.toLowerCase(), value: vendor.topic }
          : undefined,
    },
  };
}

/** Headers any sender may name a delivery's topic in, after the vendors' own; what topics are blocked by. */
export const GENERIC_TOPIC_HEADERS = ['x-topic', 'x-event-type'];

export function topicOf(headers: Headers, topicHeaders: readonly string[]): string | null {
  for (const name of topicHeaders) {
    const value = headerValue(headers, name);
    if (value) return value.slice(0, 200);
  }
  return null;
}

/**
 * Whether a delivery proves its origin as the trigger requires. `secretValues` are the values of
 * the verification's secrets; any of them may have signed (the previous one, during a rotation).
 */
export function verifyDelivery(
  verification: CompiledWebhook['verification'],
  rawBody: Buffer,
  headers: Headers,
  secretValues: readonly string[],
): boolean {
  if (verification.kind === 'none') return true;
  const presented = headerValue(headers, verification.header);
  if (presented === undefined || secretValues.length === 0) return false;
  if (verification.kind === 'shared-secret') return secretValues.some((secret) => constantTimeEqual(presented, secret));
  if (!presented.startsWith(verification.prefix)) return false;
  const digest = presented.slice(verification.prefix.length);
  return secretValues.some((secret) =>
    constantTimeEqual(digest, createHmac('sha256', secret).update(rawBody).digest(verification.encoding)),
  );
}

/** Headers whose names say they carry credentials: a flow cannot ask to keep them. */
const NEVER_KEPT = /authorization|cookie|api-?key|token|secret|password|auth/i;

/**
 * Headers kept with every message: what says how it was sent, never who sent it with what key (and a valid trace
 * context: keptHeaders).
 */
export const ORDINARY_HEADERS = ['content-type', 'content-encoding', 'user-agent', 'idempotency-key', 'x-request-id'];

/**
 * The headers kept with a message, by an allow list: the ordinary ones, the topic headers the
 * operation families read, and what the trigger declares (its sender's delivery id, topic and
 * signature, and its own `keepHeaders`). Anything else a sender adds (`X-Auth`, a session header)
 * is dropped before it is stored.
 */
export function keptHeaders(
  headers: Headers,
  webhook: Pick<CompiledWebhook, 'kept'>,
  topicHeaders: readonly string[],
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const names of [ORDINARY_HEADERS, topicHeaders, webhook.kept])
    for (const name of names) {
      const value = headers[name];
      if (value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : value;
    }
  // A trace context is kept only when valid and bounded, whatever a flow asks to keep.
  delete kept.traceparent;
  delete kept.tracestate;
  return Object.assign(
    kept,
    traceContextHeaders(headerValue(headers, 'traceparent'), headerValue(headers, 'tracestate')),
  );
}
