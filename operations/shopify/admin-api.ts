import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { OperationError, permanent, retryable } from '../../engine/model/index.ts';
import {
  type BudgetPrice,
  type HttpClient,
  type InboundResponse,
  MAX_RESPONSE_BYTES,
  type OutboundRequest,
} from '../../engine/outbound/index.ts';
import { requestedCost } from './query-cost.ts';

/** How to reach one shop's Admin GraphQL API: a static token, or an app's client credentials. */
export interface ShopAccess {
  /** The shop's URL, ending in a slash (https://example.myshopify.com/). */
  shopUrl: string;
  /** Admin API version label, YYYY-MM. */
  apiVersion: string;
  accessToken?: string;
  clientId?: string;
  clientSecret?: string;
}

export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

export interface QueryCost {
  requestedQueryCost: number;
  actualQueryCost: number | null;
  throttleStatus: ThrottleStatus;
}

interface GraphqlResponse<T> {
  data?: T;
  /** A list of GraphQL errors; on HTTP-level refusals (401, 404) Shopify sends a plain string instead. */
  errors?: Array<{ message: string; extensions?: { code?: string } }> | string;
  extensions?: { cost?: QueryCost };
}

const REQUEST_TIMEOUT_MS = 30_000;
/** Renew a client-credentials token this long before it expires. */
const TOKEN_MARGIN_MS = 5 * 60_000;

/** Per process: one token per shop and app credentials; the most recently used kept. */
const tokens = new LRUCache<string, Promise<{ token: string; expiresAt: number }>>({ max: 10_000 });
const documentDigests = new LRUCache<string, string>({ max: 1000 });
/**
 * A query's kind on the shop's budget, which remembers what Shopify asked for it last time (for every process): its
 * document at the cost reckoned for it, so that an answer corrects the reckoning wherever Shopify's own differs.
 */
const kindOf = (document: string, cost: number) => {
  let digest = documentDigests.get(document);
  if (digest === undefined) {
    digest = createHash('sha256').update(document).digest('base64url').slice(0, 22);
    documentDigests.set(document, digest);
  }
  return `graphql:${digest}:${cost}`;
};

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });

/**
 * A client of one shop's Admin GraphQL API. Throttling is waited out, never reported as a failure;
 * faults come back as OperationErrors with their kind (a rejected query is permanent, an outage retryable).
 * A run's queries draw on the shop's outbound budget, which keeps its cost bucket as Shopify last reported it:
 * each waits until the points it will request are there, so the runs of every flow sending to the shop
 * queue for points instead of throttling each other.
 */
export class ShopifyAdminApi {
  /** The cost of every query this client sent, in order (for measurement). */
  readonly costs: QueryCost[] = [];
  private readonly endpoint: string;
  /** The shop's GraphQL points are a bucket of their own, apart from its REST calls' (an http.request node's). */
  private readonly budget: string;

  constructor(
    private readonly access: ShopAccess,
    private readonly http: HttpClient,
    private readonly signal?: AbortSignal,
  ) {
    const endpoint = new URL(`admin/api/${access.apiVersion}/graphql.json`, access.shopUrl);
    this.endpoint = endpoint.toString();
    this.budget = `shopify:${endpoint.host}:graphql`;
  }

  async query<T>(document: string, variables: Record<string, unknown> = {}): Promise<T> {
    let renewedToken = false;
    for (;;) {
      const token = await this.token();
      const response = await this.post(token, document, variables);
      if (response.status === 401 && this.access.clientId && !renewedToken) {
        // A token may be revoked or expire early: fetch a new one once.
        tokens.delete(this.tokenKey());
        renewedToken = true;
        continue;
      }
      const body = response.body as GraphqlResponse<T> | undefined;
      const cost = body?.extensions?.cost;
      if (cost) this.costs.push(cost);
      if (Array.isArray(body?.errors) && body.errors.some((error) => error.extensions?.code === 'THROTTLED')) {
        const status = cost?.throttleStatus;
        const needed =
          cost && status ? Math.max(0, cost.requestedQueryCost - status.currentlyAvailable) / status.restoreRate : 1;
        await sleep(Math.ceil(needed * 1000) + 50, this.signal);
        continue;
      }
      return this.result(response.status, body);
    }
  }

  private result<T>(status: number, body: GraphqlResponse<T> | undefined): T {
    const details = { status, endpoint: this.endpoint };
    if (status === 401)
      throw permanent("Shopify refused the access token (401): check the destination's credentials", { details });
    if (status === 402 || status === 403 || status === 404 || status === 423) {
      const reason = typeof body?.errors === 'string' ? `: ${body.errors}` : '';
      throw permanent(`Shopify answered ${status}${reason}`, { details });
    }
    if (status === 429 || status >= 500) throw retryable(`Shopify answered ${status}`, { details });
    if (status >= 400 || !body) throw permanent(`Shopify answered ${status}`, { details });
    if (Array.isArray(body.errors) && body.errors.length > 0) {
      const messages = body.errors.map((error) => error.message).join('; ');
      const internal = body.errors.every((error) => error.extensions?.code === 'INTERNAL_SERVER_ERROR');
      throw new OperationError(internal ? 'retryable' : 'permanent', `Shopify rejected the query: ${messages}`, {
        details: { ...details, errors: body.errors },
      });
    }
    if (body.data === undefined || body.data === null) {
      throw permanent(`Shopify answered ${status} without data: ${JSON.stringify(body).slice(0, 200)}`, { details });
    }
    return body.data;
  }

  /** A query, drawing on the shop's budget the points it will request. */
  private async post(token: string, document: string, variables: Record<string, unknown>) {
    const body = JSON.stringify({ query: document, variables });
    const cost = requestedCost(document, variables);
    return this.postJson(new URL(this.endpoint), 'application/json', body, {
      headers: { 'x-shopify-access-token': token },
      budget: { name: this.budget, cost, costKind: kindOf(document, cost) },
      priced: priceOf,
    });
  }

  private async postJson(
    url: URL,
    contentType: string,
    body: string,
    extra: Pick<OutboundRequest, 'budget' | 'priced'> & { headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: unknown }> {
    const { headers, ...budget } = extra;
    const response = await this.http.send({
      method: 'POST',
      url,
      headers: { 'content-type': contentType, accept: 'application/json', ...headers },
      body,
      timeoutMs: REQUEST_TIMEOUT_MS,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      signal: this.signal,
      failure: 'Shopify did not answer',
      ...budget,
    });
    let parsed: unknown;
    try {
      parsed = response.body.length > 0 ? JSON.parse(response.body.toString('utf8')) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, body: parsed };
  }

  /** The secret is part of the key: a token is reused only by whoever holds the credentials it was granted for. */
  private tokenKey() {
    const secret = createHash('sha256')
      .update(this.access.clientSecret ?? '')
      .digest('base64url');
    return `${new URL(this.access.shopUrl).host}\0${this.access.clientId}\0${secret}`;
  }

  /** The static token, or a client-credentials token cached per shop and app and renewed before it expires. */
  private async token(): Promise<string> {
    if (this.access.accessToken) return this.access.accessToken;
    const key = this.tokenKey();
    const cached = tokens.get(key);
    if (cached) {
      const value = await cached.catch(() => undefined);
      if (value && value.expiresAt - TOKEN_MARGIN_MS > Date.now()) return value.token;
      if (tokens.get(key) === cached) tokens.delete(key);
    }
    let pending = tokens.get(key);
    if (!pending) {
      const granting = this.grant();
      tokens.set(key, granting);
      granting.catch(() => tokens.get(key) === granting && tokens.delete(key));
      pending = granting;
    }
    return (await pending).token;
  }

  private async grant(): Promise<{ token: string; expiresAt: number }> {
    const { status, body } = await this.postJson(
      new URL('admin/oauth/access_token', this.access.shopUrl),
      'application/x-www-form-urlencoded',
      new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: this.access.clientId ?? '',
        client_secret: this.access.clientSecret ?? '',
      }).toString(),
    );
    const granted = body as { access_token?: string; expires_in?: number } | undefined;
    if (status === 429 || status >= 500) throw retryable(`Shopify's token endpoint answered ${status}`);
    if (status !== 200 || !granted?.access_token)
      throw permanent(
        `Shopify refused the client credentials (${status}): check the destination's clientId and clientSecret`,
      );
    return { token: granted.access_token, expiresAt: Date.now() + (granted.expires_in ?? 86_399) * 1000 };
  }
}

/**
 * The shop's bucket and the query's requested and actual costs as an answer reports them (`extensions.cost`, at the
 * end of the body): found without parsing the whole body, which the caller parses once.
 */
function priceOf(response: InboundResponse): BudgetPrice | undefined {
  const { body } = response;
  // Either may come first in the cost object.
  const at = Math.min(body.lastIndexOf('"requestedQueryCost"'), body.lastIndexOf('"throttleStatus"'));
  if (at < 0) return undefined;
  const tail = body.toString('utf8', at, Math.min(body.length, at + 400));
  const figure = (pattern: RegExp) => Number(pattern.exec(tail)?.[1] ?? Number.NaN);
  const price = {
    available: figure(/"currentlyAvailable":\s*(-?[\d.]+)/),
    maximum: figure(/"maximumAvailable":\s*(-?[\d.]+)/),
    restoreRate: figure(/"restoreRate":\s*(-?[\d.]+)/),
    cost: figure(/"requestedQueryCost":\s*(-?[\d.]+)/),
    // null for a query Shopify refused (throttled): it took nothing.
    charged: /"actualQueryCost":\s*null/.test(tail) ? 0 : figure(/"actualQueryCost":\s*(-?[\d.]+)/),
  };
  return Object.values(price).every(Number.isFinite) ? price : undefined;
}
