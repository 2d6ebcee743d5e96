import type { Receiver } from './receiver.ts';

export interface SentLoad {
  /** The run id of each delivery, once accepted (202, or 200 for a key already accepted). */
  runIds: string[];
  /** Deliveries sent again because the last try got no 2xx (an error, no answer, a 503). */
  retries: number;
  /** Tries answered 200 `duplicate`: an earlier try had been accepted, but its answer never came. */
  duplicates: number;
  /** When each delivery was accepted, in order. */
  acceptedAt: number[];
}

/**
 * A sender such as Shopify behind a load balancer: order `n` is posted as `{ n }` with its own
 * `Idempotency-Key: order-<n>`, at a steady pace; a try that gets no 2xx (refused, no answer within
 * `timeoutMs`, a 5xx) is sent again with the same key, to the next API host.
 */
export class WebhookSender {
  constructor(
    private readonly apiUrls: () => string[],
    private readonly target: { tenantId: string; flowKey: string },
    private readonly timeoutMs = 10_000,
  ) {}

  async send(from: number, count: number, perSecond: number): Promise<SentLoad> {
    const load: SentLoad = { runIds: [], retries: 0, duplicates: 0, acceptedAt: [] };
    await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const n = from + index;
        await sleep((index * 1000) / perSecond);
        for (let attempt = 0; ; attempt++) {
          const urls = this.apiUrls();
          const answer = await this.post(urls[(n + attempt) % urls.length], n);
          if (answer) {
            load.runIds.push(answer.runId);
            if (answer.duplicate) load.duplicates++;
            load.acceptedAt.push(Date.now());
            return;
          }
          load.retries++;
          await sleep(200);
        }
      }),
    );
    load.acceptedAt.sort((a, b) => a - b);
    return load;
  }

  private async post(url: string, n: number): Promise<{ runId: string; duplicate?: boolean } | undefined> {
    const { tenantId, flowKey } = this.target;
    try {
      const response = await fetch(`${url}/hooks/${tenantId}/${flowKey}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `order-${n}` },
        body: JSON.stringify({ n }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const body = await response.text();
      // 202 accepted, or 200 for a key already accepted: either way the platform has it.
      return response.status === 202 || response.status === 200 ? JSON.parse(body) : undefined;
    } catch {
      return undefined;
    }
  }
}

/** What an ERP stand-in received of orders `from` to `from + count - 1`, posted by the flow with their `n`. */
export function deliveryCounts(receiver: Receiver, path: string, from: number, count: number) {
  const keysByOrder = new Map<number, string[]>();
  for (const request of receiver.requests.filter((each) => each.url === path)) {
    const { n } = JSON.parse(request.body) as { n: number };
    keysByOrder.set(n, [...(keysByOrder.get(n) ?? []), String(request.headers['idempotency-key'])]);
  }
  const orders = Array.from({ length: count }, (_, index) => keysByOrder.get(from + index) ?? []);
  return {
    delivered: orders.filter((keys) => keys.length > 0).length,
    /** Sent more than once, always with the same key: the ERP keeps one. */
    resentSameKey: orders.filter((keys) => keys.length > 1 && new Set(keys).size === 1).length,
    /** Sent with different keys: a duplicate side effect. Must be 0. */
    resentOtherKey: orders.filter((keys) => new Set(keys).size > 1).length,
    lost: orders.filter((keys) => keys.length === 0).length,
  };
}

/** The longest time between two acceptances from `since` on: how long intake was out, as the sender saw it. */
export function longestGapMs(acceptedAt: number[], since: number): number {
  let gap = 0;
  let last = since;
  for (const at of acceptedAt.filter((time) => time >= since)) {
    gap = Math.max(gap, at - last);
    last = at;
  }
  return gap;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
