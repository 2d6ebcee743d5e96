import { type Exchange, permanent, retryable, sortedKeys } from '../model/index.ts';
import type { InboundResponse, Transport } from './http-client.ts';
import { MASKED } from './recorded-exchange.ts';

/** A request as a test names it: `POST https://erp.example/orders`. */
export const requestLine = (request: { method: string; url: string }) => `${request.method} ${request.url}`;

/**
 * Whether `actual` is `recorded` with each masked part (a secret, a credential) standing for anything: a secret of
 * the environment the test runs in need not be the one the run had. Each part is looked for once, left to right (no
 * regular expression: a recording is the tenant's to write, and cannot make this backtrack).
 */
export function matchesRecorded(recorded: string, actual: string): boolean {
  const parts = recorded.split(MASKED);
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (parts.length === 1) return recorded === actual;
  if (!actual.startsWith(first) || actual.length < first.length + last.length || !actual.endsWith(last)) return false;
  let at = first.length;
  const end = actual.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = actual.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** JSON text in one form whatever the order of its keys and its spacing; other text as it is. */
function canonical(text: string | null | undefined): string {
  if (!text) return '';
  try {
    return JSON.stringify(sortedKeys(JSON.parse(text)));
  } catch {
    return text;
  }
}

/**
 * A recorded run's answers, given again (decision 29): each request is answered by the first recorded exchange of the
 * same method, URL and body not yet used; one the recording does not have fails its node for good, named. Nothing
 * goes to the network.
 */
export class RecordedAnswers {
  /** Each exchange not used yet, with its request's body in canonical form (a body cut short: none, not compared). */
  private readonly unused: Array<{ exchange: Exchange; body: string | undefined }>;
  /** Requests sent that the recording does not have. */
  readonly unrecorded: string[] = [];

  constructor(exchanges: readonly Exchange[]) {
    this.unused = exchanges.map((exchange) => ({
      exchange,
      body: exchange.request.truncated ? undefined : canonical(exchange.request.body),
    }));
  }

  /** The recorded requests no request took. */
  get unsent(): string[] {
    return this.unused.map(({ exchange }) => requestLine(exchange.request));
  }

  readonly transport: Transport = async (request) => {
    const url = request.url.href;
    const body = canonical(request.body);
    const at = this.unused.findIndex(
      ({ exchange: { request: recorded }, body: recordedBody }) =>
        recorded.method === request.method &&
        matchesRecorded(recorded.url, url) &&
        (recordedBody === undefined || matchesRecorded(recordedBody, body)),
    );
    if (at < 0) {
      const line = requestLine({ method: request.method, url: request.url.href });
      this.unrecorded.push(line);
      throw permanent(`${line} is not in the recording (by method, URL and body)`);
    }
    const [{ exchange: recorded }] = this.unused.splice(at, 1);
    const { response, error } = recorded;
    if (!response) throw retryable(`${request.failure}: ${error ?? 'no answer'} (as recorded)`);
    if (response.truncated)
      throw permanent(`${requestLine(recorded.request)}: its answer was recorded cut short, and cannot be given again`);
    return answer(response);
  };
}

function answer(response: NonNullable<Exchange['response']>): InboundResponse {
  return {
    status: response.status,
    ok: response.status >= 200 && response.status < 300,
    headers: response.headers,
    body: Buffer.from(response.body ?? ''),
  };
}
