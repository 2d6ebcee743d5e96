import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import {
  type Exchange,
  MAX_RECORDED_EXCHANGES,
  OperationError,
  parseJson,
  permanent,
  retryable,
} from '../model/index.ts';
import { type SpanContext, type Tracer, traceparentOf } from '../telemetry/index.ts';
import type { BudgetChoice, BudgetPrice, BudgetWaits, OutboundGate } from './budget-gate.ts';
import { BodyTooLargeError, decodeBody, readBody } from './http-body.ts';
import { recordedExchange } from './recorded-exchange.ts';

export interface OutboundRequest {
  method: string;
  url: URL;
  /** Names in lower case. */
  headers: Record<string, string>;
  body?: string;
  /** For the whole exchange, from connecting to the last byte. */
  timeoutMs: number;
  /** A larger response (as received, and once decoded) fails permanently instead of exhausting memory. */
  maxResponseBytes: number;
  signal?: AbortSignal;
  /** Says what failed in a transport error's message, e.g. "POST https://erp.example/orders failed". */
  failure: string;
  /** The outbound budget a run's request draws on: its origin's unless named. */
  budget?: BudgetChoice;
  /** Whether an answer says the outside account is overloaded (beyond 429 and 503, e.g. an ERP's own code). */
  overloaded?: (response: InboundResponse) => boolean;
  /** Where the account prices requests: its bucket as the answer reports it (else the client's `pricers` say). */
  priced?: AnswerPricer;
  /**
   * The headers of the same request sent again (signed afresh: a nonce is not to be used twice). Given, a request
   * its budget's account refused for its load goes again with its next turn instead of failing its attempt.
   */
  headersAgain?: () => Record<string, string>;
}

export interface InboundResponse {
  status: number;
  /** 2xx. */
  ok: boolean;
  /** Names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

/** A request its account refused for its load is sent again this many times at most, on its next turns... */
const MOST_SENT_AGAIN = 2;
/** ... when the account is open again within this long (a Retry-After further off is its node's to wait out). */
const SEND_AGAIN_WITHIN_MS = 1000;
/** What an answer says the account has left (its bucket), where the account says so; undefined where it does not. */
export type AnswerPricer = (response: InboundResponse) => BudgetPrice | undefined;

/** Answers that say the outside account is overloaded: its budget narrows. */
const OVERLOAD_STATUSES = new Set([429, 503]);
/** A request's hold on its budget outlives its timeout by this much (then a dead worker's hold ends). */
const BUDGET_LEASE_MARGIN_MS = 5000;
/** The most any response may be (http.request's maxResponseBytes is at most this). */
export const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
/** Idle sockets are closed before a typical server's keep-alive timeout (5 s for Node) closes them under a request. */
const IDLE_SOCKET_MS = 4000;
const MAX_REDIRECTS = 5;
const ACCEPT_ENCODING = 'gzip, deflate, br';
/** Dropped when a redirect leaves the origin, as fetch does. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/** Answers requests in place of the network: a recorded run's answers, replayed (decision 29). */
export type Transport = (request: OutboundRequest) => Promise<InboundResponse>;

/** Says why a request may not go to this address (e.g. "a loopback address"), or undefined where it may. */
export type AddressRefusal = (address: string) => string | undefined;

/** A host requests may not go to, and what it is. */
export interface RefusedHost {
  host: string;
  kind: string;
}

/**
 * Outbound HTTP for operations, on node:http with keep-alive agents: a request costs a fraction of
 * what `fetch` costs (no web streams, Headers objects or abort-signal plumbing), which is most of
 * an HTTP node's CPU. Follows redirects and decodes gzip, deflate and brotli as fetch does.
 *
 * With `refusedAddress`, every address a request would connect to is checked — IP literals before
 * sending, names once resolved, on each redirect — so a tenant's URL cannot reach this network's
 * own services (the cloud metadata service, the database, Redis).
 */
export class HttpClient {
  private readonly agents: Record<string, http.Agent>;

  /**
   * `partition` names whose requests may share kept-alive sockets (a tenant, see `forTenant`): a
   * socket one tenant's request left open is never handed to another's, so no tenant can ride on,
   * or read what is left on, a connection another opened.
   */
  constructor(
    private readonly options: {
      refusedAddress?: AddressRefusal;
      tracer?: Tracer;
      gate?: OutboundGate;
      /** For requests that do not price their answers: how vendors' answers say what the account has left. */
      pricers?: AnswerPricer[];
      /** Where requests go instead of the network (no budget, no redirects: the answers are final ones). */
      transport?: Transport;
    } = {},
    private readonly partition = '',
    agents?: Record<string, http.Agent>,
    /** The span (a node's attempt) whose child each request is, carrying the request's `traceparent`. */
    private readonly parent?: SpanContext,
    /** The run whose requests these are: they draw on outbound budgets (`options.gate`), adding up what they waited. */
    private readonly caller?: { tenantId: string; runId: string; waits: BudgetWaits },
    /** One attempt at a node (`forAttempt`): whether it has sent a request yet, and what it sent. */
    private readonly attempt?: { sent: boolean; exchanges?: Exchange[] },
  ) {
    const lookup = options.refusedAddress && checkedLookup(options.refusedAddress);
    const agentOptions = { keepAlive: true, scheduling: 'lifo', timeout: IDLE_SOCKET_MS, lookup } as const;
    this.agents = agents ?? {
      'http:': new PartitionedAgent(agentOptions),
      'https:': new PartitionedHttpsAgent(agentOptions),
    };
  }

  /** The same client (agents, address policy) whose kept-alive sockets serve this tenant's requests only. */
  forTenant(tenantId: string): HttpClient {
    return new HttpClient(this.options, tenantId, this.agents);
  }

  /** The same client, whose requests are spans in `parent`'s trace (when tracing is on). */
  within(parent: SpanContext): HttpClient {
    return new HttpClient(this.options, this.partition, this.agents, parent, this.caller, this.attempt);
  }

  /**
   * The same client for one run of the tenant: its requests wait for their turn on their outbound budgets, and add
   * the time they waited in place to `waits`.
   */
  forRun(tenantId: string, runId: string, waits: BudgetWaits = { ms: 0 }): HttpClient {
    return new HttpClient(this.options, tenantId, this.agents, this.parent, { tenantId, runId, waits });
  }

  /**
   * The same client for one attempt at a node. Its first request may wait for its turn as a delayed run (the node
   * starts again when it comes); a later one waits in place, since starting again would send the ones before again.
   * With `exchanges`, each request and its answer is added to it as its step keeps it (the first
   * MAX_RECORDED_EXCHANGES: a node that sends thousands keeps its first).
   */
  forAttempt(exchanges?: Exchange[]): HttpClient {
    return new HttpClient(this.options, this.partition, this.agents, this.parent, this.caller, {
      sent: false,
      exchanges,
    });
  }

  /**
   * Sends one request and reads its answer. Transport failures (refused, reset, timed out, aborted)
   * are retryable; a response over the size limit, a bad header, a redirect loop or a refused
   * address is permanent. A run's request first takes its turn on its budget (or throws `later`).
   */
  async send(request: OutboundRequest): Promise<InboundResponse> {
    const exchanges = this.attempt?.exchanges;
    if (!exchanges || exchanges.length >= MAX_RECORDED_EXCHANGES) return this.sendInTurn(request);
    try {
      const response = await this.sendInTurn(request);
      exchanges.push(recordedExchange({ request, response }));
      return response;
    } catch (error) {
      // A turn not given yet (`later`) sent nothing.
      if (!(error instanceof OperationError && error.kind === 'later'))
        exchanges.push(recordedExchange({ request, error: error instanceof Error ? error.message : String(error) }));
      throw error;
    }
  }

  private async sendInTurn(request: OutboundRequest): Promise<InboundResponse> {
    const { gate, transport } = this.options;
    if (transport) return transport(request);
    if (!gate || !this.caller) return this.sendFollowing(request);
    const budget = request.budget?.name ?? request.url.origin;
    const leaseMs = request.timeoutMs + BUDGET_LEASE_MARGIN_MS;
    const mayWaitAway = !this.attempt?.sent;
    let current = request;
    for (let sentAgain = 0; ; sentAgain++) {
      const grant = await gate.enter(this.caller, budget, request.budget, {
        leaseMs,
        mayWaitAway: mayWaitAway && sentAgain === 0,
        signal: request.signal,
        again: sentAgain > 0,
      });
      this.caller.waits.ms += grant.waitedMs;
      if (this.attempt) this.attempt.sent = true;
      let response: InboundResponse | undefined;
      try {
        response = await this.sendFollowing(current);
      } finally {
        if (!response) gate.leave(grant, 'neutral');
      }
      const priced = request.priced ? request.priced(response) : this.priceOf(response);
      const refused = response.status === 429 || request.overloaded?.(response) === true;
      if (!refused && !OVERLOAD_STATUSES.has(response.status)) {
        gate.leave(grant, 'ok', undefined, priced);
        return response;
      }
      const closedMs = retryAfter(response.headers['retry-after']);
      gate.leave(grant, 'overloaded', closedMs, priced);
      // Refused for the account's load, the request was not taken: it goes again at the head of the line, with the
      // turn the narrowed budget gives next, rather than spend an attempt of its node and its backoff on the
      // budget's probing. Not a 503 (it may have been taken), nor past a Retry-After the node is to wait out.
      if (!refused || !request.headersAgain || sentAgain === MOST_SENT_AGAIN || (closedMs ?? 0) > SEND_AGAIN_WITHIN_MS)
        return response;
      current = { ...request, headers: request.headersAgain() };
    }
  }

  private priceOf(response: InboundResponse): BudgetPrice | undefined {
    for (const pricer of this.options.pricers ?? []) {
      const price = pricer(response);
      if (price) return price;
    }
    return undefined;
  }

  private async sendFollowing(request: OutboundRequest): Promise<InboundResponse> {
    let current = request;
    for (let redirects = 0; ; redirects++) {
      const response = await (this.parent && this.options.tracer?.enabled
        ? this.tracedExchange(current, redirects, this.options.tracer, this.parent)
        : this.exchange(current));
      const location = REDIRECTS.has(response.status) ? response.headers.location : undefined;
      if (location === undefined) return response;
      if (redirects === MAX_REDIRECTS)
        throw permanent(`${request.failure}: more than ${MAX_REDIRECTS} redirects`, {
          details: { url: where(request.url) },
        });
      current = redirected(current, response.status, location);
    }
  }

  /**
   * Why requests to this URL's host are refused, where that is known before resolving a name: an IP
   * literal, or a loopback name (`localhost`). For checks when a URL is saved.
   */
  refusedHost(url: URL): RefusedHost | undefined {
    const host = url.hostname.toLowerCase();
    if ((host === 'localhost' || host.endsWith('.localhost')) && this.options.refusedAddress?.('127.0.0.1'))
      return { host, kind: 'a loopback name' };
    return this.refusedLiteral(url);
  }

  /**
   * Why a URL a tenant saves cannot be sent to: not a URL, or a host this deployment's requests refuse (as
   * far as can be told before resolving names); undefined when it can.
   */
  urlRefusal(text: string): string | undefined {
    if (!URL.canParse(text)) return 'is not a URL';
    const refused = this.refusedHost(new URL(text));
    return (
      refused &&
      `points at ${refused.host}, ${refused.kind}; requests to non-public addresses are refused here (OUTBOUND_PRIVATE_ADDRESSES)`
    );
  }

  private refusedLiteral(url: URL): RefusedHost | undefined {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const kind = isIP(host) ? this.options.refusedAddress?.(host) : undefined;
    return kind ? { host, kind } : undefined;
  }

  /** An exchange as a client span (HTTP semantic conventions), its `traceparent` sent with the request. */
  private async tracedExchange(
    request: OutboundRequest,
    resendCount: number,
    tracer: Tracer,
    parent: SpanContext,
  ): Promise<InboundResponse> {
    const { url } = request;
    const span = tracer.start(request.method, {
      kind: 'client',
      parent,
      attributes: {
        'http.request.method': request.method,
        'server.address': url.hostname,
        'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
        'url.full': where(url),
        'http.request.resend_count': resendCount || undefined,
      },
    });
    try {
      const response = await this.exchange({
        ...request,
        headers: { ...request.headers, traceparent: traceparentOf(span.context) },
      });
      span.set({ 'http.response.status_code': response.status });
      span.end(response.status >= 400 ? String(response.status) : undefined);
      return response;
    } catch (error) {
      span.end(error instanceof OperationError ? error.kind : 'error');
      throw error;
    }
  }

  private exchange(request: OutboundRequest): Promise<InboundResponse> {
    const { url, signal } = request;
    return new Promise<InboundResponse>((resolve, reject) => {
      const agent = this.agents[url.protocol];
      if (!agent) return reject(permanent(`${request.failure}: ${url.protocol} is not HTTP`));
      // A literal address is connected to without a lookup: check it here.
      const literal = this.refusedLiteral(url);
      if (literal) return reject(refusal(request, `${literal.host} is ${literal.kind}`));
      const headers: Record<string, string> = { 'accept-encoding': ACCEPT_ENCODING, ...request.headers };
      if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));

      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () =>
        fail(
          retryable(`${request.failure}: ${signal?.reason instanceof Error ? signal.reason.message : 'aborted'}`, {
            details: { url: where(url) },
          }),
        );
      const finish = () => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: OperationError) => {
        if (settled) return;
        finish();
        outgoing?.destroy();
        reject(error);
      };
      const transportFailure = (reason: string) =>
        fail(retryable(`${request.failure}: ${reason}`, { details: { url: where(url) } }));

      let outgoing: http.ClientRequest | undefined;
      try {
        const options: PartitionedRequestOptions = {
          method: request.method,
          headers,
          agent,
          partition: this.partition,
        };
        outgoing = (url.protocol === 'https:' ? https : http).request(url, options);
      } catch (error) {
        // Node refuses a header name or value that is not valid HTTP (a newline, say): sending again cannot help.
        return fail(
          permanent(`${request.failure}: ${error instanceof Error ? error.message : String(error)}`, {
            details: { url: where(url) },
          }),
        );
      }
      timer = setTimeout(() => transportFailure(`no answer within ${request.timeoutMs} ms`), request.timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });

      outgoing.on('error', (error) =>
        error instanceof RefusedAddressError
          ? fail(refusal(request, error.message))
          : transportFailure(describe(error)),
      );
      outgoing.on('response', (incoming) => {
        receive(incoming, request).then((response) => {
          if (settled) return;
          finish();
          resolve(response);
        }, fail);
      });
      outgoing.end(request.body);
    });
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Request options reach the agent's `getName`, which names the pool of sockets a request may reuse. */
type PartitionedRequestOptions = http.RequestOptions & { partition: string };

class PartitionedAgent extends http.Agent {
  override getName(options: PartitionedRequestOptions) {
    return `${super.getName(options)}|${options.partition}`;
  }
}

class PartitionedHttpsAgent extends https.Agent {
  override getName(options: PartitionedRequestOptions) {
    return `${super.getName(options)}|${options.partition}`;
  }
}

/**
 * Raised by the checked lookup; surfaces as the request's error, naming the host only: what a name resolves to
 * inside the deployment is not the caller's to learn.
 */
class RefusedAddressError extends Error {
  constructor(hostname: string) {
    super(`${hostname} is refused by the address policy`);
  }
}

/** dns.lookup, failing when any address of the name is refused (whichever one the socket would pick). */
function checkedLookup(refusedAddress: AddressRefusal): LookupFunction {
  return (hostname, options, callback) =>
    dns.lookup(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const addresses = typeof address === 'string' ? [address] : address.map((entry) => entry.address);
      for (const candidate of addresses) {
        if (refusedAddress(candidate)) return callback(new RefusedAddressError(hostname), address, family);
      }
      callback(null, address, family);
    });
}

const refusal = (request: OutboundRequest, what: string) =>
  permanent(
    `${request.failure}: ${what}, and requests to non-public addresses are refused here (OUTBOUND_PRIVATE_ADDRESSES)`,
    { details: { url: where(request.url) } },
  );

/** The request a redirect asks for: 303 (and 301/302 after a POST) becomes a GET without body. */
function redirected(request: OutboundRequest, status: number, location: string): OutboundRequest {
  let url: URL;
  try {
    url = new URL(location, request.url);
  } catch {
    throw permanent(`${request.failure}: redirected to an invalid location`, { details: { url: where(request.url) } });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw permanent(`${request.failure}: redirected to a ${url.protocol} URL`);
  const headers = { ...request.headers };
  if (url.origin !== request.url.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
  const toGet =
    status === 303 ? request.method !== 'HEAD' : (status === 301 || status === 302) && request.method === 'POST';
  if (!toGet) return { ...request, url, headers };
  delete headers['content-type'];
  delete headers['content-length'];
  return { ...request, url, headers, method: 'GET', body: undefined };
}

/** Reads and decodes an answer: a broken stream is retryable; over the size limit or undecodable, permanent. */
async function receive(incoming: http.IncomingMessage, request: OutboundRequest): Promise<InboundResponse> {
  const limit = request.maxResponseBytes;
  const status = incoming.statusCode ?? 0;
  const details = { url: where(request.url), status };
  const headers = flatHeaders(incoming.headers);
  const tooLarge = (error: BodyTooLargeError) =>
    permanent(
      error.stage === 'declared'
        ? `response of ${headers['content-length']} bytes exceeds maxResponseBytes (${limit})`
        : `response exceeds maxResponseBytes (${limit})${error.stage === 'decoded' ? ' once decoded' : ''}`,
      { details },
    );
  let received: Buffer;
  try {
    received = await readBody(incoming, limit);
  } catch (error) {
    throw error instanceof BodyTooLargeError
      ? tooLarge(error)
      : retryable(`${request.failure}: ${describe(error as Error)}`, { details: { url: where(request.url) } });
  }
  try {
    const body = await decodeBody(headers['content-encoding'], received, limit);
    return { status, ok: status >= 200 && status < 300, headers, body };
  } catch (error) {
    throw error instanceof BodyTooLargeError
      ? tooLarge(error)
      : permanent(`${request.failure}: the response could not be decoded`, { details });
  }
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** A network error's own words ("connect ECONNREFUSED 127.0.0.1:9", "socket hang up"). */
const describe = (error: Error) => error.message || (error as NodeJS.ErrnoException).code || 'network error';

/** Origin and path only: a query string may carry credentials. */
export const where = (url: URL) => `${url.origin}${url.pathname}`;

/** Milliseconds a Retry-After header (seconds or an HTTP date) asks to wait. */
export function retryAfter(header: string | undefined): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The body as JSON when the content type says so (and it parses), else as text. */
export function bodyValue(response: InboundResponse): unknown {
  const text = response.body.toString('utf8');
  if (text.length > 0 && /[/+]json\b/i.test(response.headers['content-type'] ?? '')) {
    try {
      return parseJson(text);
    } catch {
      return text;
    }
  }
  return text;
}
