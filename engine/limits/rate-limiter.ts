import { type RedisClient, LuaScript, withinEnqueueTimeout } from '../redis/index.ts';

/** A sustained rate and how much of it may be spent at once. */
export interface Rate {
  perSecond: number;
  burst: number;
}

export type RateDecision = { allowed: true; left: number } | { allowed: false; retryAfterSeconds: number };

/**
 * Lua: a token bucket saved as "tokens:ms", refilled to `now`. Shared by the scripts that keep
 * buckets (here, and the delivery quotas of admission.ts).
 */
export const REFILL_LUA = `
local function refilled(saved, now, rate, burst)
  if not saved then return burst end
  local colon = string.find(saved, ':', 1, true)
  local tokens, at = tonumber(string.sub(saved, 1, colon - 1)), tonumber(string.sub(saved, colon + 1))
  return math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
end
`;

/**
 * One bucket per key, which expires once full again: buckets named by what callers send (a client
 * id, an address) cost Redis nothing after a quiet while. ARGV: now (ms), per second, burst, cost (a
 * negative cost gives tokens back). Returns {1, tokens left} or {0, ms until the cost is there}.
 */
const TAKE = new LuaScript(
  'rate-limit',
  `${REFILL_LUA}
local now, rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tokens = refilled(redis.call('GET', KEYS[1]), now, rate, burst)
if tokens < cost then return {0, tostring(math.ceil((cost - tokens) * 1000 / rate))} end
tokens = math.min(burst, tokens - cost)
redis.call('SET', KEYS[1], tokens .. ':' .. now, 'PX', math.ceil((burst - tokens) * 1000 / rate) + 1000)
return {1, tostring(tokens)}
`,
);

/** Token buckets in Redis, shared by every process of the deployment. */
export class RateLimiter {
  constructor(
    private readonly redis: () => Promise<RedisClient>,
    private readonly prefix: string,
  ) {}

  /** Take `cost` tokens from the bucket `name`, or say how long until they are there. */
  async take(name: string, rate: Rate, cost = 1): Promise<RateDecision> {
    const key = `${this.prefix}:tributary:rate:${name}`;
    const args = [Date.now(), rate.perSecond, rate.burst, cost];
    const [allowed, figure] = (await withinEnqueueTimeout(
      this.redis().then((redis) => TAKE.run(redis, [key], args)),
      'check a rate limit',
    )) as [number, string];
    return allowed === 1
      ? { allowed: true, left: Number(figure) }
      : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(Number(figure) / 1000)) };
  }

  /** Give back what `take` took (an attempt that turned out not to count). */
  async giveBack(name: string, rate: Rate, cost = 1): Promise<void> {
    await this.take(name, rate, -cost);
  }
}
