import { type Exchange, permanent, retryable, sortedKeys } from '../model/index.ts';
import type { InboundResponse, OutboundRequest, Transport } from './http-client.ts';
import { MASKED } from './recorded-exchange.ts';

/** A request as a test names it: `POST https://erp.example/orders`. */
export const requestLine = (request: { method: string; url: string }) => `${request.method} ${request.url}`;

/**
 * A recorded value as a pattern: what was masked in it (a secret, a credential) matches anything, the rest itself.
 * A secret of the environment the test runs in need not be the one the run had.
 */
function recordedPattern(recorded: string): RegExp {
  const parts = recorded.split(MASKED).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[\\s\\S]*?')}$`);
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

function matches(recorded: Exchange['request'], request: OutboundRequest): boolean {
  if (recorded.method !== request.method || !recordedPattern(recorded.url).test(request.url.href)) return false;
  // A body cut short when recorded is not compared: the method and URL decide.
  return recorded.truncated === true || recordedPattern(canonical(recorded.body)).test(canonical(request.body));
}

/**
 * A recorded run's answers, given again (decision 29): each request is answered by the first recorded exchange of the
 * same method, URL and body not yet used; one the recording does not have fails its node for good, named. Nothing
 * goes to the network.
 */
export class RecordedAnswers {
  private readonly unused: Exchange[];
  /** Requests sent that the recording does not have. */
  readonly unrecorded: string[] = [];

  constructor(exchanges: readonly Exchange[]) {
    this.unused = [...exchanges];
  }

  /** The recorded requests no request took. */
  get unsent(): string[] {
    return this.unused.map((exchange) => requestLine(exchange.request));
  }

  readonly transport: Transport = async (request) => {
    const at = this.unused.findIndex((exchange) => matches(exchange.request, request));
    if (at < 0) {
      const line = requestLine({ method: request.method, url: request.url.href });
      this.unrecorded.push(line);
      throw permanent(`${line} is not in the recording (by method, URL and body)`);
    }
    const [recorded] = this.unused.splice(at, 1);
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
