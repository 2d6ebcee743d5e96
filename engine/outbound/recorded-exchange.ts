import { type Exchange, MAX_RECORDED_BODY_BYTES } from '../model/index.ts';
import { MASK } from '../secrets/index.ts';

/** A request sent and what came back (or why nothing did), as the HTTP client has them. */
export interface SentExchange {
  request: { method: string; url: URL; headers: Record<string, string>; body?: string };
  response?: { status: number; headers: Record<string, string>; body: Buffer };
  error?: string;
}

/** What stands for a credential or secret in a recording: what stands for a secret anywhere. */
export const MASKED = MASK;
/** Headers that carry credentials whatever their value: masked whole (a signature, a session, a key). */
const CREDENTIAL_HEADER =
  /^(authorization|proxy-authorization|cookie|set-cookie)$|(^|-)(api-?key|token|secret|signature|hmac|password)($|-)/i;
/** Request headers the client adds or that change with each sending: not kept. */
const TRANSPORT_HEADER = /^(content-length|transfer-encoding|connection|keep-alive|accept-encoding|traceparent)$/;

/** Text kept of a body: its first MAX_RECORDED_BODY_BYTES. */
function keptBody(body: string | Buffer | undefined): { body: string | null; truncated?: true } {
  if (body === undefined || body.length === 0) return { body: null };
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  if (bytes.length <= MAX_RECORDED_BODY_BYTES) return { body: bytes.toString('utf8') };
  return { body: bytes.subarray(0, MAX_RECORDED_BODY_BYTES).toString('utf8'), truncated: true };
}

/** Headers as a recording keeps them: credentials masked whole, transport headers left out. */
export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (!TRANSPORT_HEADER.test(name)) kept[name] = CREDENTIAL_HEADER.test(name) ? MASKED : value;
  return kept;
}

/**
 * An exchange as its step keeps it (decision 29): the request's credential headers masked whole, bodies cut at
 * MAX_RECORDED_BODY_BYTES. The run masks its secrets in it when its step is made.
 */
export function recordedExchange(sent: SentExchange): Exchange {
  const { request, response } = sent;
  const { body, truncated } = keptBody(request.body);
  const exchange: Exchange = {
    request: {
      method: request.method,
      url: request.url.href,
      headers: keptHeaders(request.headers),
      body,
      ...(truncated ? { truncated } : {}),
    },
    response: null,
  };
  if (response) {
    const answer = keptBody(response.body);
    // An answer's headers as they came: an operation's output may hold them (http.request's does).
    exchange.response = {
      status: response.status,
      headers: response.headers,
      body: answer.body,
      ...(answer.truncated ? { truncated: answer.truncated } : {}),
    };
  } else exchange.error = sent.error ?? 'no answer';
  return exchange;
}
