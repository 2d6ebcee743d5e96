import { createHmac, timingSafeEqual } from 'node:crypto';
import { Receiver, type ReceivedRequest, type Reply } from './receiver.ts';

export interface ErpCredentials {
  consumerKey: string;
  consumerSecret: string;
  tokenId: string;
  tokenSecret: string;
  accountId: string;
}

const MAX_CLOCK_SKEW_S = 300;
const invalidLogin: Reply = {
  status: 401,
  body: { error: { code: 'INVALID_LOGIN_ATTEMPT', message: 'Invalid login attempt.' } },
};

/** Canned ERP answers, in NetSuite's shapes. */
export const erpReplies = {
  tooManyRequests: {
    status: 429,
    body: { error: { code: 'SSS_REQUEST_LIMIT_EXCEEDED', message: 'Too many requests' } },
    headers: { 'retry-after': '0' },
  },
  concurrencyLimit: {
    status: 400,
    body: { error: { code: 'SSS_REQUEST_LIMIT_EXCEEDED', message: 'Request limit exceeded for this account.' } },
  },
  invalidField: {
    status: 400,
    body: {
      error: {
        code: 'INVALID_FLD_VALUE',
        message: 'You have entered an Invalid Field Value 99 for the following field: location',
      },
    },
  },
  serverError: { status: 500, body: { error: { code: 'UNEXPECTED_ERROR', message: 'An unexpected error occurred.' } } },
  okWithError: {
    status: 200,
    body: { error: { code: 'USER_ERROR', message: 'Customer refund could not be created: period is closed' } },
  },
} satisfies Record<string, Reply>;

/**
 * A stand-in ERP RESTlet. It checks token-based authentication with its own verifier (not the
 * client's signer): consumer and token, realm in upper case, a timestamp within five minutes, a
 * nonce never seen before, and the HMAC-SHA256 signature over method, URL and parameters.
 */
export class ErpSimulator extends Receiver {
  private readonly nonces = new Set<string>();
  readonly path = '/app/site/hosting/restlet.nl?script=1234&deploy=1';
  /** The account's concurrency limit and how long it takes over a request, once `limitConcurrency` set them. */
  private limit?: { concurrency: number; serviceMs: number };

  constructor(readonly credentials: ErpCredentials) {
    super((request) => this.verify(request) ?? this.overLimit(request));
  }

  /**
   * As a NetSuite account: `concurrency` requests in flight at most, each taking `serviceMs`; one more is refused
   * with 429 SSS_REQUEST_LIMIT_EXCEEDED.
   */
  limitConcurrency(concurrency: number, serviceMs: number): this {
    this.limit = { concurrency, serviceMs };
    return this;
  }

  /** Requests refused for the account's concurrency limit. */
  refusedForLimit(): number {
    return this.requests.filter((request) => request.reply?.status === 429).length;
  }

  private overLimit(request: ReceivedRequest): Reply | undefined {
    if (!this.limit) return undefined;
    const open = this.requests.filter((other) => other !== request && !other.refused && other.answeredAt === undefined);
    return open.length >= this.limit.concurrency ? { ...erpReplies.tooManyRequests, headers: {} } : undefined;
  }

  get apiUrl() {
    return `${this.url}${this.path}`;
  }

  /** The records the ERP accepted (verified, answered 2xx without an error). */
  receipts(): unknown[] {
    return this.requests
      .filter(
        (request) =>
          !request.refused &&
          request.reply &&
          request.reply.status < 300 &&
          !(request.reply.body as { error?: unknown } | undefined)?.error,
      )
      .map((request) => JSON.parse(request.body));
  }

  protected override defaultReply(): Reply {
    return {
      status: 200,
      body: { success: true, creditMemoId: String(1000 + this.receipts().length) },
      delayMs: this.limit?.serviceMs,
    };
  }

  private verify(request: ReceivedRequest): Reply | undefined {
    const header = String(request.headers.authorization ?? '');
    if (!header.startsWith('OAuth ')) return invalidLogin;
    const params = new Map<string, string>();
    for (const part of header.slice(6).split(',')) {
      const match = /^\s*([\w]+)="([^"]*)"\s*$/.exec(part);
      if (!match) return invalidLogin;
      params.set(match[1], decodeURIComponent(match[2]));
    }
    const { consumerKey, tokenId, accountId } = this.credentials;
    if (params.get('realm') !== accountId.toUpperCase()) return invalidLogin;
    if (params.get('oauth_consumer_key') !== consumerKey || params.get('oauth_token') !== tokenId) return invalidLogin;
    if (params.get('oauth_signature_method') !== 'HMAC-SHA256' || params.get('oauth_version') !== '1.0')
      return invalidLogin;
    const timestamp = Number(params.get('oauth_timestamp'));
    if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > MAX_CLOCK_SKEW_S) return invalidLogin;
    const nonce = params.get('oauth_nonce') ?? '';
    if (nonce.length < 6 || this.nonces.has(`${nonce}:${timestamp}`)) return invalidLogin;

    const expected = this.signature(request, params);
    const given = Buffer.from(params.get('oauth_signature') ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return invalidLogin;
    this.nonces.add(`${nonce}:${timestamp}`);
    return undefined;
  }

  private signature(request: ReceivedRequest, header: Map<string, string>): Buffer {
    const rfc3986 = (value: string) =>
      encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    const [pathname, query = ''] = request.url.split('?');
    const pairs: [string, string][] = [...header].filter(
      ([key]) => key.startsWith('oauth_') && key !== 'oauth_signature',
    );
    for (const [key, value] of new URLSearchParams(query)) pairs.push([key, value]);
    const normalized = pairs
      .map(([key, value]) => [rfc3986(key), rfc3986(value)])
      .sort(([k1, v1], [k2, v2]) => (k1 !== k2 ? (k1 < k2 ? -1 : 1) : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
      .map(([key, value]) => `${key}=${value}`)
      .join('&');
    const baseUrl = `http://${String(request.headers.host).toLowerCase()}${pathname}`;
    const base = `${request.method.toUpperCase()}&${rfc3986(baseUrl)}&${rfc3986(normalized)}`;
    const key = `${rfc3986(this.credentials.consumerSecret)}&${rfc3986(this.credentials.tokenSecret)}`;
    return Buffer.from(createHmac('sha256', key).update(base).digest('base64'));
  }
}
