import { permanent, retryable } from '../../engine/model/index.ts';
import { bodyValue, MAX_RESPONSE_BYTES, retryAfter, where } from '../../engine/outbound/index.ts';
import type { FromSchema } from 'json-schema-to-ts';
import { defineOperation, type OperationContext } from '../../engine/plugins/index.ts';
import { MASK } from '../../engine/secrets/index.ts';
import { oauth1Header } from './oauth1.ts';

const text = { type: 'string', minLength: 1 } as const;

/**
 * Headers the client sets itself or that belong to one connection (framing and hop-by-hop): a
 * tenant's value could smuggle a second request or hold a shared connection. Any case.
 */
const RESERVED_HEADERS = [
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-*',
];
const anyCase = (name: string) => name.replace(/[a-z]/g, (letter) => `[${letter}${letter.toUpperCase()}]`);
const reservedHeader = `^(${RESERVED_HEADERS.map((name) => anyCase(name).replace('*', '.*')).join('|')})$`;

const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], default: 'GET' },
    url: { type: 'string', pattern: '^https?://' },
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      propertyNames: { not: { pattern: reservedHeader } },
      default: {},
      description: `Not ${RESERVED_HEADERS.join(', ')}: the client sets those itself.`,
    },
    query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, default: {} },
    body: { description: 'Sent as JSON unless it is a string.' },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 300_000, default: 30_000 },
    maxResponseBytes: { type: 'integer', minimum: 1, maximum: MAX_RESPONSE_BYTES, default: 5 * 1024 * 1024 },
    budget: {
      type: 'string',
      pattern: '^[A-Za-z0-9._:-]{1,100}$',
      description:
        "The outbound budget the request draws on, shared with every node of the tenant's flows that names it " +
        "(two hosts of one account); by default the URL's origin (scheme, host and port) has one. A budget lets " +
        'as many requests in flight as the account has shown it takes: see docs/concepts.md.',
    },
    idempotencyKeyHeader: {
      type: ['string', 'null'],
      default: 'Idempotency-Key',
      description: 'Header that carries the idempotency key; null sends none.',
    },
    auth: {
      oneOf: [
        { type: 'object', additionalProperties: false, required: ['type'], properties: { type: { const: 'none' } } },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'token'],
          properties: { type: { const: 'bearer' }, token: text },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'username', 'password'],
          properties: { type: { const: 'basic' }, username: { type: 'string' }, password: { type: 'string' } },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'header', 'value'],
          properties: { type: { const: 'apiKey' }, header: text, value: text },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'consumerKey', 'consumerSecret', 'token', 'tokenSecret'],
          description: 'Token-based authentication (OAuth 1.0a, HMAC-SHA256), e.g. NetSuite TBA; realm = account id.',
          properties: {
            type: { const: 'oauth1' },
            consumerKey: text,
            consumerSecret: text,
            token: text,
            tokenSecret: text,
            realm: { type: 'string' },
          },
        },
      ],
    },
  },
} as const;

type HttpRequestConfig = FromSchema<typeof configSchema>;

/** Methods that change nothing on the server (RFC 9110 §9.2.1): a dry run sends them. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

export const httpRequest = defineOperation({
  name: 'http.request',
  title: 'HTTP request',
  description:
    'Calls an HTTP endpoint; the output is {status, headers, body}. 429, 5xx and network errors are retried; other ' +
    "4xx fail the run. Sends the node's idempotency key so the receiver can drop repeats.",
  version: '1.0.0',
  sideEffects: true,
  readOnly: (config) => SAFE_METHODS.has(config.method ?? 'GET'),
  configSchema,
  async preview(ctx: OperationContext<HttpRequestConfig>) {
    const { url, method, headers, body } = buildRequest(ctx.config, ctx.idempotencyKey);
    // Credentials the auth put in headers are masked; secrets elsewhere are redacted from every output.
    const credentialHeaders = new Set([
      'authorization',
      ctx.config.auth?.type === 'apiKey' ? ctx.config.auth.header.toLowerCase() : '',
    ]);
    const shown = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name, credentialHeaders.has(name) ? MASK : value]),
    );
    return { method, url: url.toString(), headers: shown, body: body === undefined ? null : ctx.config.body };
  },
  async run(ctx: OperationContext<HttpRequestConfig>) {
    const { config } = ctx;
    const request = buildRequest(config, ctx.idempotencyKey);
    const { method, url } = request;
    const started = performance.now();
    const response = await ctx.http.send({
      ...request,
      timeoutMs: config.timeoutMs ?? 30_000,
      maxResponseBytes: config.maxResponseBytes ?? 5 * 1024 * 1024,
      signal: ctx.signal,
      failure: `${method} ${where(url)} failed`,
      budget: config.budget === undefined ? undefined : { name: config.budget },
      headersAgain: () => buildRequest(config, ctx.idempotencyKey).headers,
    });
    const body = bodyValue(response);
    const message = `${method} ${where(url)} answered ${response.status}`;
    // A refusal is worth a line in the run's log; a success is in the step's output already (debug only).
    ctx.logger[response.ok ? 'debug' : 'warn'](
      { status: response.status, ms: Math.round(performance.now() - started) },
      message,
    );
    if (response.ok) return { status: response.status, headers: response.headers, body };

    const details = { status: response.status, body: preview(body) };
    if (response.status === 429 || response.status >= 500)
      throw retryable(message, { details, retryAfterMs: retryAfter(response.headers['retry-after']) });
    throw permanent(message, { details });
  },
});

/**
 * The request `run` sends (and `preview` shows): URL with query, headers (names in lower case) with auth and
 * idempotency key, body.
 */
function buildRequest(config: HttpRequestConfig, idempotencyKey: string) {
  const url = new URL(config.url);
  for (const [name, value] of Object.entries(config.query ?? {})) url.searchParams.append(name, String(value));
  const method = config.method ?? 'GET';
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers ?? {})) headers[name.toLowerCase()] = value;
  if (config.idempotencyKeyHeader !== null)
    headers[(config.idempotencyKeyHeader ?? 'Idempotency-Key').toLowerCase()] = idempotencyKey;
  let body: string | undefined;
  if (config.body !== undefined && method !== 'GET' && method !== 'HEAD') {
    body = typeof config.body === 'string' ? config.body : JSON.stringify(config.body);
    headers['content-type'] ??= typeof config.body === 'string' ? 'text/plain' : 'application/json';
  }
  const auth = config.auth;
  if (auth?.type === 'bearer') headers.authorization = `Bearer ${auth.token}`;
  if (auth?.type === 'basic')
    headers.authorization = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  if (auth?.type === 'apiKey') headers[auth.header.toLowerCase()] = auth.value;
  // Signed per attempt: a retry carries a fresh nonce and timestamp.
  if (auth?.type === 'oauth1') headers.authorization = oauth1Header(method, url.toString(), auth);
  return { url, method, headers, body };
}

function preview(body: unknown) {
  const textual = typeof body === 'string' ? body : JSON.stringify(body);
  return textual.length > 2000 ? `${textual.slice(0, 2000)}…` : body;
}
