import type { Redis } from 'ioredis';

/**
 * Per-tenant concurrency across every worker process: a tenant may have at most `limit` runs
 * executing at once, so one tenant's slow or looping runs cannot take every worker slot. Each slot
 * is a lease in a sorted set (score = expiry): a worker that dies leaves leases that expire by
 * themselves; live workers renew theirs.
 */
export class TenantSlots {
  private readonly held = new Map<string, string>();

  constructor(
    private readonly redis: () => Promise<Redis>,
    private readonly options: { prefix: string; limit: number; leaseMs: number },
  ) {}

  private key(tenantId: string) {
    return `${this.options.prefix}:tributary:tenant-slots:${tenantId}`;
  }

  /** Take a slot for this run; false when the tenant is at its limit. */
  async acquire(tenantId: string, runId: string): Promise<boolean> {
    const now = Date.now();
    const redis = await this.redis();
    const taken = await redis.eval(
      ACQUIRE,
      1,
      this.key(tenantId),
      now,
      now + this.options.leaseMs,
      this.options.limit,
      runId,
    );
    if (taken === 1) this.held.set(runId, tenantId);
    return taken === 1;
  }

  async release(tenantId: string, runId: string) {
    this.held.delete(runId);
    await (await this.redis()).zrem(this.key(tenantId), runId);
  }

  /** Extend the leases this process holds (called with the worker heartbeat). */
  async renew() {
    if (this.held.size === 0) return;
    const redis = await this.redis();
    const expiry = Date.now() + this.options.leaseMs;
    const pipeline = redis.pipeline();
    for (const [runId, tenantId] of this.held) pipeline.zadd(this.key(tenantId), 'XX', expiry, runId);
    await pipeline.exec();
  }
}

// Drop expired leases, then take one if fewer than the limit are held (a run already holding one keeps it).
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[4]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
  return 1
end
return 0
`;
