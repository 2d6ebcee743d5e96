import { OperationError, parseJson, retryable } from '../../engine/model/index.ts';
import { oauth1Header } from '../core/oauth1.ts';
import { type HttpClient, MAX_RESPONSE_BYTES, retryAfter, where } from '../../engine/outbound/index.ts';

/** The destination's ERP block: token-based authentication (NetSuite TBA). */
export interface ErpAccess {
  apiUrl: string;
  consumerKey: string;
  consumerSecret: string;
  tokenId: string;
  tokenSecret: string;
  accountId: string;
  /** Concurrent requests the account allows (15, plus 10 per SuiteCloud Plus licence), when known. */
  concurrency?: number;
  ratePerSecond?: number;
}

export interface ErpReceipt {
  status: number;
  body: unknown;
}

const SEND_TIMEOUT_MS = 60_000;
/** The ERP's own code for "too many concurrent requests for this account": a reason to wait, not to fail. */
const CONCURRENCY_LIMIT = 'SSS_REQUEST_LIMIT_EXCEEDED';

/**
 * POSTs one JSON document to the ERP, signed with OAuth 1.0a (HMAC-SHA256, realm = the account id in
 * upper case, a fresh nonce and timestamp on every attempt). 429, 5xx, network errors and the
 * ERP's concurrency limit are retryable; any other refusal, including a 200 that carries an ERP
 * error, is permanent and carries the ERP's own message.
 */
export async function sendToErp(
  erp: ErpAccess,
  document: unknown,
  options: { idempotencyKey: string; http: HttpClient; signal?: AbortSignal },
): Promise<ErpReceipt> {
  const request = erpRequest(erp, document, options.idempotencyKey);
  const url = new URL(request.url);
  // A send that fails in transit may have reached the ERP: the processed-refunds marker, checked first, keeps a
  // repeat out.
  const response = await options.http.send({
    method: request.method,
    url,
    headers: request.headers,
    body: JSON.stringify(document),
    timeoutMs: SEND_TIMEOUT_MS,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    signal: options.signal,
    failure: `ERP ${where(url)} did not answer`,
    // NetSuite limits concurrent requests per account, across every integration that uses it: the destination's
    // limits hold for every request drawing on the account's budget (an http.request node may name it).
    budget: {
      name: `erp:${erp.accountId.toUpperCase()}`,
      limits: { concurrency: erp.concurrency, ratePerSecond: erp.ratePerSecond },
    },
    overloaded: (answer) =>
      answer.body.includes(CONCURRENCY_LIMIT) &&
      erpErrorOf(parseBody(answer.body.toString('utf8')))?.code === CONCURRENCY_LIMIT,
    headersAgain: () => erpRequest(erp, document, options.idempotencyKey).headers,
  });
  const text = response.body.toString('utf8');
  const body = parseBody(text);
  const erpError = erpErrorOf(body);
  const details = {
    url: where(url),
    status: response.status,
    ...(erpError ? { erpCode: erpError.code, erpMessage: erpError.message } : {}),
  };
  if (response.ok && !erpError) return { status: response.status, body };

  const described = erpError
    ? `${erpError.code ? `${erpError.code}: ` : ''}${erpError.message}`
    : text.slice(0, 500) || '(empty body)';
  const message = `ERP answered ${response.status}: ${described}`;
  if (response.status === 429 || response.status >= 500 || erpError?.code === CONCURRENCY_LIMIT) {
    throw retryable(message, { details, retryAfterMs: retryAfter(response.headers['retry-after']) });
  }
  throw new OperationError('permanent', message, { details });
}

/** The request `sendToErp` sends, signed (a fresh nonce and timestamp each time it is made). */
export function erpRequest(erp: ErpAccess, document: unknown, idempotencyKey: string) {
  const authorization = oauth1Header('POST', erp.apiUrl, {
    consumerKey: erp.consumerKey,
    consumerSecret: erp.consumerSecret,
    token: erp.tokenId,
    tokenSecret: erp.tokenSecret,
    realm: erp.accountId.toUpperCase(),
  });
  return {
    method: 'POST',
    url: erp.apiUrl,
    body: document,
    headers: {
      authorization,
      'content-type': 'application/json',
      accept: 'application/json',
      'idempotency-key': idempotencyKey,
    } as Record<string, string>,
  };
}

function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return parseJson(text);
  } catch {
    return text;
  }
}

/**
 * The ERP's error, in either of NetSuite's shapes: a RESTlet's `{error: {code, message}}` (possibly
 * inside a 200) or the REST API's `{title, "o:errorDetails": [{detail, "o:errorCode"}]}`.
 */
function erpErrorOf(body: unknown): { code?: string; message: string } | undefined {
  if (!body || typeof body !== 'object') return undefined;
  // biome-ignore lint/suspicious/noExplicitAny: the ERP's answer is any JSON; each field read is checked
  const value = body as Record<string, any>;
  if (value.error && typeof value.error === 'object')
    return { code: value.error.code, message: String(value.error.message ?? value.error.code ?? 'error') };
  const detail = Array.isArray(value['o:errorDetails']) ? value['o:errorDetails'][0] : undefined;
  if (detail) return { code: detail['o:errorCode'], message: String(detail.detail ?? value.title ?? 'error') };
  return undefined;
}
