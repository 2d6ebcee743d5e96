import { LRUCache } from 'lru-cache';
import { type RedisClient, LuaScript, withinEnqueueTimeout } from '../redis/index.ts';
import { GroupCommit } from '../store/index.ts';
import { REFILL_LUA } from './rate-limiter.ts';

/** A tenant's intake quota: deliveries per second with a burst, and a cap on runs waiting to start. */
export interface DeliveryQuota {
  perSecond: number;
  burst: number;
  /** Most runs of the tenant waiting in its lanes; 0 for no cap. */
  maxQueuedRuns: number;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number; reason: string };

export interface QuotaStatus extends DeliveryQuota {
  /** Deliveries the tenant may send at once now. */
  available: number;
  queuedRuns: number;
}

/** How long a sender over the queued-runs cap is asked to wait: runs drain at no rate known here. */
const QUEUED_RETRY_SECONDS = 10;
/** The longest a refusal for the rate is repeated without asking Redis (an operator may raise the quota meanwhile). */
const MAX_REMEMBERED_REFUSAL_MS = 1000;

/** A tenant's answer from ADMIT: admitted (1 or 0), tokens left or ms to wait, queued runs, its quota. */
type AdmitAnswer = [number, string, number, number, number, number];
const ANSWER_LENGTH = 6;

/**
 * Token bucket per tenant, shared by every API process: one hash field per tenant ("tokens:at ms").
 * KEYS[1] buckets, KEYS[2] the lanes' backlog per tenant, KEYS[3] operators' overrides (tenant ->
 * JSON). ARGV: now, per second, burst, queued cap (0: none), then for each request its tenant and 1 to
 * take a token or 0 to look, in the order they came (a tenant's requests take its tokens in turn).
 * Returns, for each request, {1 or 0, tokens left (admitted or looking) or ms to wait (0: over the
 * queued cap), queued runs, per second, burst, queued cap}, one after the other in one list.
 */
const ADMIT = new LuaScript(
  'admit',
  `${REFILL_LUA}
local now = tonumber(ARGV[1])
local function number(value, default)
  if type(value) == 'number' then return value end
  return default
end
local answers = {}
local function answer(...)
  for _, value in ipairs({...}) do answers[#answers + 1] = value end
end
for i = 5, #ARGV, 2 do
  local tenant, take = ARGV[i], ARGV[i + 1]
  local rate, burst, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  -- One call answers many tenants: an override that does not read as numbers is ignored rather than fail them all.
  local override = redis.call('HGET', KEYS[3], tenant)
  local readable, limits = pcall(cjson.decode, override or '{}')
  if readable and type(limits) == 'table' then
    rate = number(limits.deliveriesPerSecond, rate)
    burst = number(limits.deliveryBurst, burst)
    cap = number(limits.maxQueuedRuns, cap)
  end
  local tokens = refilled(redis.call('HGET', KEYS[1], tenant), now, rate, burst)
  local queued = tonumber(redis.call('HGET', KEYS[2], tenant) or '0')
  if take == '0' then
    answer(1, tostring(tokens), queued, rate, burst, cap)
  elseif cap > 0 and queued >= cap then
    redis.call('HSET', KEYS[1], tenant, tokens .. ':' .. now)
    answer(0, '0', queued, rate, burst, cap)
  elseif tokens < 1 then
    redis.call('HSET', KEYS[1], tenant, tokens .. ':' .. now)
    answer(0, tostring(math.ceil((1 - tokens) * 1000 / rate)), queued, rate, burst, cap)
  else
    redis.call('HSET', KEYS[1], tenant, (tokens - 1) .. ':' .. now)
    answer(1, tostring(tokens - 1), queued, rate, burst, cap)
  end
end
return answers
`,
);

/**
 * Admission control at the flow URLs: over its quota, a tenant's delivery is refused before
 * anything is recorded (429 with Retry-After: senders such as Shopify retry), so one tenant's flood
 * costs the others no store writes, no queue room and little CPU. An accepted message is never
 * dropped: the quota applies before acceptance only.
 */
export class TenantQuotas {
  /** Per slot group of the run path: its tenants' buckets, its lanes' backlog, its tenants' overrides. */
  private readonly keys: Array<[string, string, string]>;
  /**
   * Tenants this process refused for their rate, until their next token: none can come sooner (tokens come only
   * with time; other processes can only take them), so a delivery meanwhile is refused at once, without Redis. A
   * flood of refused deliveries then costs the process and Redis little more than its 429s.
   */
  private readonly refused = new LRUCache<string, Admission & { admitted: false }>({ max: 10_000 });
  /**
   * Per slot group, the requests that come while its last call is out go together in the next (GroupCommit):
   * under load one call to Redis answers many deliveries. A call each cost the intake a tenth of its time on a
   * socket write (50 connections, embedded serve).
   */
  private readonly calls: Array<GroupCommit<{ tenantId: string; take: boolean }, AdmitAnswer>>;

  constructor(
    private readonly redis: () => Promise<RedisClient>,
    private readonly options: {
      /** Each slot group of the run path: its keys' hash tag, and its hash of runs waiting in its lanes by tenant. */
      groups: Array<{ slot: string; backlogKey: string }>;
      /** The group of a tenant's runs (RunQueue.groupOf): its quota is kept beside their backlog. */
      groupOf: (tenantId: string) => number;
      deliveries: DeliveryQuota;
    },
  ) {
    this.keys = options.groups.map(({ slot, backlogKey }) => [
      `${slot}:tributary:delivery-buckets`,
      backlogKey,
      `${slot}:tributary:delivery-quotas`,
    ]);
    // A call that fails (Redis away or late) fails each of its requests: there is no bad one to single out.
    this.calls = this.keys.map(
      (keys) =>
        new GroupCommit((requests) => this.callFor(keys, requests), {
          maxBatch: 500,
          maxInFlight: 1,
          retryEachAlone: false,
        }),
    );
  }

  private keysOf(tenantId: string) {
    return this.keys[this.options.groupOf(tenantId)];
  }

  /** An operator's quota for this tenant in place of the deployment's (fields left out: the deployment's). */
  async override(
    tenantId: string,
    quota: { deliveriesPerSecond?: number; deliveryBurst?: number; maxQueuedRuns?: number },
  ): Promise<void> {
    const redis = await this.redis();
    const overrides = this.keysOf(tenantId)[2];
    if (Object.keys(quota).length === 0) await redis.hdel(overrides, tenantId);
    else await redis.hset(overrides, tenantId, JSON.stringify(quota));
    this.refused.delete(tenantId);
  }

  /** Take one delivery from the tenant's quota, or say how long to wait. */
  async admitDelivery(tenantId: string): Promise<Admission> {
    const refused = this.refused.get(tenantId);
    if (refused) return refused;
    const [admitted, figure, , perSecond, burst, maxQueuedRuns] = await this.call(tenantId, true);
    if (admitted === 1) return { admitted: true };
    const wait = Number(figure);
    if (wait === 0) {
      return {
        admitted: false,
        retryAfterSeconds: QUEUED_RETRY_SECONDS,
        reason: `${maxQueuedRuns} runs of the tenant are waiting to start (TENANT_MAX_QUEUED_RUNS)`,
      };
    }
    const refusal = {
      admitted: false as const,
      retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
      reason:
        `the tenant sends more than ${perSecond} deliveries a second, ${burst} at once ` +
        '(TENANT_DELIVERIES_PER_SECOND, TENANT_DELIVERY_BURST)',
    };
    this.refused.set(tenantId, refusal, { ttl: Math.min(wait, MAX_REMEMBERED_REFUSAL_MS) });
    return refusal;
  }

  /** The tenant's quota and what is left of it, without taking any. */
  async status(tenantId: string): Promise<QuotaStatus> {
    const [, tokens, queuedRuns, perSecond, burst, maxQueuedRuns] = await this.call(tenantId, false);
    return { perSecond, burst, maxQueuedRuns, available: Math.floor(Number(tokens)), queuedRuns };
  }

  /** What is left of each tenant's delivery quota now (tenants that never sent are left out). */
  async available(): Promise<Record<string, number>> {
    const redis = await this.redis();
    const groups = await Promise.all(
      this.keys.map(([buckets, , overrides]) => Promise.all([redis.hgetall(buckets), redis.hgetall(overrides)])),
    );
    const buckets = Object.assign({}, ...groups.map(([inGroup]) => inGroup));
    const overrides = Object.assign({}, ...groups.map(([, inGroup]) => inGroup));
    const now = Date.now();
    return Object.fromEntries(
      Object.entries<string>(buckets).map(([tenant, saved]) => {
        const own = overrides[tenant] ? JSON.parse(overrides[tenant]) : {};
        const perSecond = own.deliveriesPerSecond ?? this.options.deliveries.perSecond;
        const burst = own.deliveryBurst ?? this.options.deliveries.burst;
        const [tokens, at] = saved.split(':').map(Number);
        return [tenant, Math.floor(Math.min(burst, tokens + (Math.max(0, now - at) * perSecond) / 1000))];
      }),
    );
  }

  private call(tenantId: string, take: boolean): Promise<AdmitAnswer> {
    return this.calls[this.options.groupOf(tenantId)].submit({ tenantId, take });
  }

  private async callFor(
    keys: [string, string, string],
    requests: Array<{ tenantId: string; take: boolean }>,
  ): Promise<AdmitAnswer[]> {
    const { perSecond, burst, maxQueuedRuns } = this.options.deliveries;
    const args: Array<string | number> = [Date.now(), perSecond, burst, maxQueuedRuns];
    for (const { tenantId, take } of requests) args.push(tenantId, take ? 1 : 0);
    // A sender waits for the answer: Redis must give it in time (a failure is a 503, and the sender retries).
    const answers = (await withinEnqueueTimeout(
      this.redis().then((redis) => ADMIT.run(redis, keys, args)),
      "check the tenant's quota",
    )) as Array<number | string>;
    return requests.map((_, index) => answers.slice(index * ANSWER_LENGTH, (index + 1) * ANSWER_LENGTH) as AdmitAnswer);
  }
}
