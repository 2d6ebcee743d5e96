import { readFileSync } from 'node:fs';
import { later, newId } from '../model/index.ts';
import type {
  BudgetChoice,
  BudgetGrant,
  BudgetLimits,
  BudgetOutcome,
  BudgetPrice,
  EnterOptions,
  OutboundGate,
} from '../outbound/index.ts';
import { LuaScript, type RedisClient } from '../redis/index.ts';

const SCRIPT = new LuaScript(
  'outbound-budget',
  readFileSync(new URL('./outbound-budget.lua', import.meta.url), 'utf8'),
);

export interface BudgetOptions {
  /** Redis key prefix of the deployment. */
  prefix: string;
  /** The window of a budget never seen: slow start grows it from there. */
  initialConcurrency: number;
  /** The most a budget without a concurrency of its own lets in flight. */
  maxConcurrency: number;
  /** Wakes runs whose turn came (they wait for it as a delayed job). */
  wake: (tenantId: string, runIds: string[]) => void;
}

/** The kind of request of those that say nothing of their cost. */
const ANY_REQUEST = 'request';
/** A run in the line asks again this often without being woken (a lost wake-up costs this long). */
const LINE_RECHECK_MS = 5000;
/** At most this many runs of a budget's line wait for their turn in place (holding their worker slots)... */
const MOST_IN_PLACE = 16;
/** ... for this long at most, asking again this often (its turn may come from another process). */
const IN_PLACE_MS = 2000;
const POLL_MS = 25;
/** A turn handed to a run is kept this long for it to come back and take it. */
const TURN_MS = 3000;
/** What a budget learned is forgotten a day after its last request. */
const KEPT_MS = 24 * 3600_000;
/** A budget is listed for metrics at most this often per process. */
const LISTED_EVERY_MS = 10_000;
/** Budgets listed for metrics after this long without a request are left out, and past this many (the oldest). */
const LISTED_FOR_MS = 3600_000;
const MOST_LISTED = 1000;

/** One budget's state, for metrics. */
export interface BudgetStatus {
  tenantId: string;
  budget: string;
  limit: number;
  inFlight: number;
  waiting: number;
}

interface Waiter {
  /** Runs ahead of it in the line without a slot, when it last asked. */
  ahead: number;
  done: () => void;
}

type Answer = [
  admitted: number,
  waitMs: number,
  reason: number,
  ahead: number,
  inFlight: number,
  window: number,
  near: number,
  cost: number,
];
/** What a refused request waits for (outbound-budget.lua). */
const SLOT = 0;
const CLOSED = 1;

/** The fields of a request that ended, in an exchange's call (outbound-budget.lua's ARGV). */
const ENDED_FIELDS = 11;

/** What one process has for one budget since its last call: requests that ended, and requests to admit. */
interface Exchange {
  key: string;
  /** The account's limits as the requests' configuration gives them; none: as the budget keeps them. */
  limits?: BudgetLimits;
  ended: Array<string | number>;
  asking: Array<{
    args: Array<string | number>;
    answer: (answer: Answer, at: number) => void;
    fail: (error: unknown) => void;
  }>;
}

/**
 * Outbound budgets in Redis (outbound-budget.lua), shared by every process of the deployment: each tenant's runs
 * draw on one budget per outside account, whose window adapts to what the account answers, and wait in turn when
 * it is full. What a process's runs ask of one budget and give back within one turn of the event loop goes in one
 * call. Each budget's keys share a hash tag of their own, so budgets spread over a cluster's masters.
 */
export class OutboundBudgets implements OutboundGate {
  private readonly listedAt = new Map<string, number>();
  /** Runs waiting in this process for their turn, close to it: by run, and by budget. */
  private readonly waitingHere = new Map<string, Set<Waiter>>();
  private readonly waitingOn = new Map<string, Set<Waiter>>();
  /** Runs asking for a turn in this process (waiting here, or their ask on its way), with how many asks each. */
  private readonly askingHere = new Map<string, number>();
  /** Runs asking here whose turn came while their ask was on its way. */
  private readonly turnsCame = new Set<string>();
  private readonly indexKey: string;
  /** The calls to make at the end of this turn of the event loop, by budget. */
  private exchanges = new Map<string, Exchange>();

  constructor(
    private readonly redis: () => Promise<RedisClient>,
    private readonly options: BudgetOptions,
  ) {
    this.indexKey = `${options.prefix}:tributary:budgets`;
  }

  async enter(
    caller: { tenantId: string; runId: string },
    budget: string,
    choice: BudgetChoice | undefined,
    options: EnterOptions,
  ): Promise<BudgetGrant> {
    this.askingHere.set(caller.runId, (this.askingHere.get(caller.runId) ?? 0) + 1);
    try {
      return await this.take(caller, budget, choice, options);
    } finally {
      const asking = this.askingHere.get(caller.runId)! - 1;
      if (asking === 0) {
        this.askingHere.delete(caller.runId);
        this.turnsCame.delete(caller.runId);
      } else this.askingHere.set(caller.runId, asking);
    }
  }

  /** Asks for a turn until the budget admits the request, or the run is to wait away. */
  private async take(
    caller: { tenantId: string; runId: string },
    budget: string,
    choice: BudgetChoice | undefined,
    { leaseMs, mayWaitAway, signal, again }: EnterOptions,
  ): Promise<BudgetGrant> {
    const key = `${caller.tenantId}:${budget}`;
    const limits = choice?.limits;
    // A request that says nothing of its cost is of one kind with the others: an account that prices its answers
    // per request (Shopify REST's call limit) teaches what one costs.
    const costKind = choice?.costKind ?? (choice?.cost === undefined ? ANY_REQUEST : '');
    // A request costs a point (under a configured rate, or a call limit the answers report), unless it says what it
    // costs or its kind was priced before. Counted so from the start, the requests in flight before the first
    // priced answer are subtracted from the bucket it reports, as any in flight are.
    const expected = choice?.cost ?? 1;
    const id = newId();
    const asked = Date.now();
    const deadline = asked + IN_PLACE_MS;
    this.list(key);
    for (let refused = false; ; refused = true) {
      this.turnsCame.delete(caller.runId);
      const [[admitted, waitMs, reason, ahead, inFlight, window, near, cost], at] = await new Promise<[Answer, number]>(
        (resolve, fail) =>
          this.exchange(key, limits).asking.push({
            args: [caller.runId, id, leaseMs, expected, costKind, again ? 1 : 0],
            answer: (answer, at) => resolve([answer, at]),
            fail,
          }),
      );
      if (admitted === 1) {
        const waitedMs = refused ? at - asked : 0;
        const grant = { budget: key, id, startedAt: at, limits, cost, costKind, waitedMs };
        // Its node gave up meanwhile (a timeout, a shutdown): nothing is sent.
        if (signal?.aborted) this.leave(grant, 'neutral');
        signal?.throwIfAborted();
        return grant;
      }
      // Near its turn (the budget says so), a run waits for it here; further back, it waits as a delayed job, holding
      // no slot. A run waiting for points waits here when they are there before the end of its wait in place. A node
      // that sent requests in this attempt always waits here: starting it again would send them again.
      const left = deadline - Date.now();
      const close = reason === SLOT ? near === 1 : reason !== CLOSED && waitMs < left;
      signal?.throwIfAborted();
      // A turn that came while it asked is taken with another ask at once, not left to lapse while it waits.
      const turnCame = this.turnsCame.has(caller.runId);
      if (mayWaitAway && (!close || left <= 0) && !turnCame) {
        const why =
          reason === SLOT
            ? `${inFlight} in flight of ${window}`
            : reason === CLOSED
              ? `closed for ${waitMs} ms (Retry-After)`
              : `${cost} points are there in ${waitMs} ms`;
        throw later(`waits for its turn on outbound budget ${budget}: ${why}, number ${ahead + 1} in line`, {
          retryAfterMs: reason === SLOT ? LINE_RECHECK_MS : waitMs,
          // When it began to wait away, and how long it waited here first: the run counts its time waited.
          details: {
            budget,
            inFlight,
            limit: window,
            place: ahead + 1,
            waitedMs: Date.now() - asked,
            since: Date.now(),
          },
        });
      }
      if (!turnCame) await this.nearTurn(caller.runId, key, ahead, reason === SLOT ? POLL_MS : waitMs);
    }
  }

  leave(grant: BudgetGrant, outcome: BudgetOutcome, retryAfterMs?: number, price?: BudgetPrice): void {
    const retryAfter = Math.max(0, Math.round(retryAfterMs ?? 0));
    this.exchange(grant.budget, grant.limits).ended.push(
      grant.id,
      grant.cost,
      grant.startedAt,
      outcome,
      retryAfter,
      price?.available ?? -1,
      price?.maximum ?? -1,
      price?.restoreRate ?? -1,
      price?.cost ?? -1,
      grant.costKind ?? '',
      price?.charged ?? -1,
    );
    this.askWithRelease(grant.budget);
  }

  /** The budgets used within the last hour (the latest MOST_LISTED): their window, in flight and runs waiting. */
  async statuses(): Promise<BudgetStatus[]> {
    const redis = await this.redis();
    const listed = await redis.zrevrangebyscore(
      this.indexKey,
      '+inf',
      Date.now() - LISTED_FOR_MS,
      'LIMIT',
      0,
      MOST_LISTED,
    );
    return Promise.all(
      listed.map(async (key) => {
        const [limit, inFlight, waiting] = (await SCRIPT.run(
          redis,
          this.keys(key),
          this.head('status', Date.now(), undefined),
        )) as number[];
        const split = key.indexOf(':');
        return { tenantId: key.slice(0, split), budget: key.slice(split + 1), limit, inFlight, waiting };
      }),
    );
  }

  /** This turn's exchange with the budget, made at its end. */
  private exchange(key: string, limits: BudgetLimits | undefined): Exchange {
    const batch = `${limits ? `${limits.concurrency ?? 0}:${limits.ratePerSecond ?? 0}` : '?'}:${key}`;
    let exchange = this.exchanges.get(batch);
    if (!exchange) {
      if (this.exchanges.size === 0) setImmediate(() => this.flush());
      exchange = { key, limits, ended: [], asking: [] };
      this.exchanges.set(batch, exchange);
    }
    return exchange;
  }

  private flush() {
    const exchanges = this.exchanges;
    this.exchanges = new Map();
    for (const exchange of exchanges.values()) void this.send(exchange);
  }

  private async send({ key, limits, ended, asking }: Exchange) {
    try {
      const redis = await this.redis();
      const now = Date.now();
      const [woken, answers] = (await SCRIPT.run(redis, this.keys(key), [
        ...this.head('exchange', now, limits),
        ended.length / ENDED_FIELDS,
        ...ended,
        ...asking.flatMap((ask) => ask.args),
      ])) as [string[], number[]];
      for (const [i, ask] of asking.entries()) ask.answer(answers.slice(i * 8, i * 8 + 8) as Answer, now);
      const elsewhere = woken.filter((runId) => !this.turnCame(runId));
      // A budget's key begins with its tenant's id (which holds no colon).
      if (elsewhere.length > 0) this.options.wake(key.slice(0, key.indexOf(':')), elsewhere);
    } catch (error) {
      // Requests that ended are given back by their leases' end when Redis does not answer.
      for (const ask of asking) ask.fail(error);
    }
  }

  private keys(key: string): string[] {
    const base = `{${this.options.prefix}:budget:${key}}`;
    return [base, ...['flight', 'line', 'turns', 'seen', 'called', 'costs'].map((part) => `${base}:${part}`)];
  }

  /**
   * Resolves when a request of this process gives the run its turn or frees a slot of its budget, or after `ms`
   * (another process may have).
   */
  private nearTurn(runId: string, budget: string, ahead: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const ofRun = this.waitingHere.get(runId) ?? new Set<Waiter>();
      const onBudget = this.waitingOn.get(budget) ?? new Set<Waiter>();
      const waiter = {
        ahead,
        done: () => {
          clearTimeout(timer);
          ofRun.delete(waiter);
          if (ofRun.size === 0) this.waitingHere.delete(runId);
          onBudget.delete(waiter);
          if (onBudget.size === 0) this.waitingOn.delete(budget);
          resolve();
        },
      };
      const timer = setTimeout(waiter.done, ms);
      ofRun.add(waiter);
      this.waitingHere.set(runId, ofRun);
      onBudget.add(waiter);
      this.waitingOn.set(budget, onBudget);
    });
  }

  /**
   * Tells a run asking here that its turn came; false when it does not ask here. One asking but not waiting (its ask
   * is on its way) takes the turn with its next ask.
   */
  private turnCame(runId: string): boolean {
    if (!this.askingHere.has(runId)) return false;
    const waiters = this.waitingHere.get(runId);
    if (waiters) for (const { done } of waiters) done();
    else this.turnsCame.add(runId);
    return true;
  }

  /**
   * A request of the budget ended: the run waiting here nearest the head of its line asks again in the same call,
   * so that the slot freed goes to it there and then, not a round trip later.
   */
  private askWithRelease(budget: string) {
    let nearest: Waiter | undefined;
    for (const waiter of this.waitingOn.get(budget) ?? [])
      if (!nearest || waiter.ahead < nearest.ahead) nearest = waiter;
    nearest?.done();
  }

  /** The script's first arguments; limits not given are -1 (as the budget keeps them), none given 0. */
  private head(operation: 'exchange' | 'status', now: number, limits: BudgetLimits | undefined) {
    const { initialConcurrency, maxConcurrency } = this.options;
    return [
      operation,
      now,
      initialConcurrency,
      maxConcurrency,
      KEPT_MS,
      MOST_IN_PLACE,
      TURN_MS,
      LINE_RECHECK_MS * 3,
      limits ? (limits.ratePerSecond ?? 0) : -1,
      limits ? (limits.concurrency ?? 0) : -1,
    ];
  }

  /** Keeps the budget in the list metrics read, at most once per LISTED_EVERY_MS per process. */
  private list(key: string) {
    const now = Date.now();
    if ((this.listedAt.get(key) ?? 0) > now - LISTED_EVERY_MS) return;
    this.listedAt.set(key, now);
    if (this.listedAt.size > 10_000) this.listedAt.clear();
    void this.redis()
      .then((redis) =>
        redis
          .multi()
          .zadd(this.indexKey, now, key)
          .zremrangebyscore(this.indexKey, '-inf', now - LISTED_FOR_MS)
          .exec(),
      )
      .catch(() => {});
  }
}
