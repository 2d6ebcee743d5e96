import { OperationError, permanent, retryable } from '../../engine/errors.ts';
import type { FromSchema } from 'json-schema-to-ts';
import { defineOperation, type OperationContext } from '../../engine/operations.ts';
import { MASK } from '../../engine/runtime/redact.ts';
import { oauth1Header } from './oauth1.ts';

const text = { type: 'string', minLength: 1 } as const;

export const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], default: 'GET' },
    url: { type: 'string', pattern: '^https?://' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
    query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, default: {} },
    body: { description: 'Sent as JSON unless it is a string.' },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 300_000, default: 30_000 },
    maxResponseBytes: { type: 'integer', minimum: 1, maximum: MAX_RESPONSE_BYTES, default: 5 * 1024 * 1024 },
    idempotencyKeyHeader: {
      type: ['string', 'null'], default: 'Idempotency-Key',
      description: 'Header that carries the idempotency key; null sends none.',
    },
    auth: {
      oneOf: [
        { type: 'object', additionalProperties: false, required: ['type'], properties: { type: { const: 'none' } } },
        { type: 'object', additionalProperties: false, required: ['type', 'token'], properties: { type: { const: 'bearer' }, token: text } },
        {
          type: 'object', additionalProperties: false, required: ['type', 'username', 'password'],
          properties: { type: { const: 'basic' }, username: { type: 'string' }, password: { type: 'string' } },
        },
        {
          type: 'object', additionalProperties: false, required: ['type', 'header', 'value'],
          properties: { type: { const: 'apiKey' }, header: text, value: text },
        },
        {
          type: 'object', additionalProperties: false, required: ['type', 'consumerKey', 'consumerSecret', 'token', 'tokenSecret'],
          description: 'Token-based authentication (OAuth 1.0a, HMAC-SHA256), e.g. NetSuite TBA; realm = account id.',
          properties: {
            type: { const: 'oauth1' }, consumerKey: text, consumerSecret: text, token: text, tokenSecret: text, realm: { type: 'string' },
          },
        },
      ],
    },
  },
} as const;

type HttpRequestConfig = FromSchema<typeof configSchema>;

export const httpRequest = defineOperation({
  name: 'http.request',
  title: 'HTTP request',
  description:
    'Calls an HTTP endpoint; the output is {status, headers, body}. 429, 5xx and network errors are retried; other 4xx fail the run. ' +
    'Sends the node\'s idempotency key so the receiver can drop repeats.',
  version: '1.0.0',
  sideEffects: true,
  configSchema,
  async preview(ctx: OperationContext<HttpRequestConfig>) {
    const { url, method, headers, body } = buildRequest(ctx.config, ctx.idempotencyKey);
    // Credentials the auth put in headers are masked; secrets elsewhere are redacted from every output.
    const credentialHeaders = new Set(['authorization', ctx.config.auth?.type === 'apiKey' ? ctx.config.auth.header.toLowerCase() : '']);
    const shown = Object.fromEntries([...headers].map(([name, value]) => [name, credentialHeaders.has(name) ? MASK : value]));
    return { method, url: url.toString(), headers: shown, body: body === undefined ? null : ctx.config.body };
  },
  async run(ctx: OperationContext<HttpRequestConfig>) {
    const { config } = ctx;
    const { url, method, headers, body } = buildRequest(config, ctx.idempotencyKey);

    const timeoutMs = config.timeoutMs ?? 30_000;
    // One controller for both the node's signal (timeout, shutdown) and this request's own timeout.
    const controller = new AbortController();
    const stop = () => controller.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', stop, { once: true });
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    let response: Response;
    let responseBody: unknown;
    const started = performance.now();
    try {
      response = await fetch(url, { method, headers, body, signal: controller.signal });
      responseBody = await readBody(response, config.maxResponseBytes ?? 5 * 1024 * 1024);
    } catch (error) {
      if (error instanceof OperationError) throw error;
      const reason = controller.signal.aborted && controller.signal.reason instanceof Error ? controller.signal.reason.message
        : error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      throw retryable(`${method} ${url.origin}${url.pathname} failed: ${reason}`, { details: { url: `${url.origin}${url.pathname}` } });
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', stop);
    }
    const result = { status: response.status, headers: Object.fromEntries(response.headers), body: responseBody };
    // A refusal is worth a line in the run's log; a success is in the step's output already (debug only).
    // Origin and path only: a query string may carry credentials.
    ctx.logger[response.ok ? 'debug' : 'warn']({ status: response.status, ms: Math.round(performance.now() - started) }, `${method} ${url.origin}${url.pathname} answered ${response.status}`);
    if (response.ok) return result;

    const details = { status: response.status, body: preview(responseBody) };
    const message = `${method} ${url.origin}${url.pathname} answered ${response.status}`;
    if (response.status === 429 || response.status >= 500) throw retryable(message, { details, retryAfterMs: retryAfter(response.headers.get('retry-after')) });
    throw permanent(message, { details });
  },
});

/** The request `run` sends (and `preview` shows): URL with query, headers with auth and idempotency key, body. */
function buildRequest(config: HttpRequestConfig, idempotencyKey: string) {
  const url = new URL(config.url);
  for (const [name, value] of Object.entries(config.query ?? {})) url.searchParams.append(name, String(value));
  const method = config.method ?? 'GET';
  const headers = new Headers(config.headers ?? {});
  if (config.idempotencyKeyHeader !== null) headers.set(config.idempotencyKeyHeader ?? 'Idempotency-Key', idempotencyKey);
  let body: string | undefined;
  if (config.body !== undefined && method !== 'GET' && method !== 'HEAD') {
    body = typeof config.body === 'string' ? config.body : JSON.stringify(config.body);
    if (!headers.has('content-type')) headers.set('content-type', typeof config.body === 'string' ? 'text/plain' : 'application/json');
  }
  const auth = config.auth;
  if (auth?.type === 'bearer') headers.set('authorization', `Bearer ${auth.token}`);
  if (auth?.type === 'basic') headers.set('authorization', `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`);
  if (auth?.type === 'apiKey') headers.set(auth.header, auth.value);
  // Signed per attempt: a retry carries a fresh nonce and timestamp.
  if (auth?.type === 'oauth1') headers.set('authorization', oauth1Header(method, url.toString(), auth));
  return { url, method, headers, body };
}

/** Reads at most `limit` bytes: a larger response fails the node instead of exhausting memory. */
async function readBody(response: Response, limit: number): Promise<unknown> {
  const declared = response.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) {
    await response.body?.cancel();
    throw permanent(`response of ${declared} bytes exceeds maxResponseBytes (${limit})`);
  }
  // A declared length that fits is read in one go; otherwise the body is streamed and counted.
  const bytes = declared !== null ? Buffer.from(await response.arrayBuffer()) : await readCapped(response, limit);
  const text = bytes.toString('utf8');
  if (text.length > 0 && /[/+]json\b/i.test(response.headers.get('content-type') ?? '')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

async function readCapped(response: Response, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > limit) throw permanent(`response exceeds maxResponseBytes (${limit})`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks);
}

function preview(body: unknown) {
  const textual = typeof body === 'string' ? body : JSON.stringify(body);
  return textual.length > 2000 ? `${textual.slice(0, 2000)}…` : body;
}

/** Milliseconds a Retry-After header (seconds or an HTTP date) asks to wait. */
export function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
