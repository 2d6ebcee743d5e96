import type { Queue } from 'bullmq';
import type { ChainableCommander } from 'ioredis';
import { type RedisClient, LuaScript } from '../redis/index.ts';

/**
 * What the ledger knows of a run's crashes: those it is charged with (its worker was executing nothing else), and
 * those it only shared with other runs (a neighbour, a kill or the process itself may have caused them).
 */
export interface CrashEvidence {
  charged: number;
  shared: number;
}

/** A worker's record of the runs it executes outlives the worker by this long: the evidence of its crash. */
const RECORD_TTL_S = 3600;
/** A run's crash record: forgotten a day after its last crash. */
const CRASHES_TTL_S = 24 * 3600;

/**
 * KEYS: the run's crashes (hash: charged, shared, and `w:<worker>` for each crash counted), the workers (zset:
 * worker -> last beat). ARGV: run id, this worker, the ledger's key prefix, the oldest beat kept, the crashes' TTL.
 * A worker whose record still holds the run never let it go: it died (or stopped answering) while executing it.
 * Each such crash counts once: charged to the run when that worker executed nothing else, shared otherwise.
 */
const TAKE_OVER = new LuaScript(
  'take-over',
  `
for _, worker in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[4], '+inf')) do
  local executed = ARGV[3] .. 'ran:' .. worker
  if worker ~= ARGV[2] and redis.call('SISMEMBER', executed, ARGV[1]) == 1
      and redis.call('HSETNX', KEYS[1], 'w:' .. worker, 1) == 1 then
    redis.call('HINCRBY', KEYS[1], redis.call('SCARD', executed) == 1 and 'charged' or 'shared', 1)
    redis.call('EXPIRE', KEYS[1], ARGV[5])
  end
end
local counts = redis.call('HMGET', KEYS[1], 'charged', 'shared')
return { tonumber(counts[1]) or 0, tonumber(counts[2]) or 0 }
`,
);

/**
 * Which runs each worker is executing, so that a run taken over from a worker that died is charged with the crash
 * only where the evidence points at it. Kept beside the run queue's keys (in its slot on a cluster). A run's start
 * and end are sent without waiting, a turn of the event loop's worth at once: a crash before they reach Redis
 * leaves the run uncharged, and BullMQ's stall limit still bounds it.
 */
export class CrashLedger {
  private readonly base: string;
  private readonly workers: string;
  private readonly ownRuns: string;
  /** Each run's latest change not yet sent: started executing here (true) or ended (false). */
  private unsent = new Map<string, boolean>();

  constructor(
    private readonly redis: () => Promise<RedisClient>,
    queue: Pick<Queue, 'toKey'>,
    private readonly workerId: string,
  ) {
    this.base = queue.toKey('tributary:crash:');
    this.workers = `${this.base}workers`;
    this.ownRuns = `${this.base}ran:${workerId}`;
  }

  /** The run starts executing here. */
  hold(runId: string) {
    this.record(runId, true);
  }

  /** The run's pass ended here, whatever its outcome. */
  release(runId: string) {
    this.record(runId, false);
  }

  private record(runId: string, executing: boolean) {
    this.unsent.set(runId, executing);
    if (this.unsent.size === 1) setImmediate(() => void this.send());
  }

  private async send() {
    const records = this.unsent;
    this.unsent = new Map();
    const started: string[] = [];
    const ended: string[] = [];
    for (const [runId, executing] of records) (executing ? started : ended).push(runId);
    try {
      const commands = (await this.redis()).pipeline();
      if (started.length > 0)
        commands
          .sadd(this.ownRuns, ...started)
          .expire(this.ownRuns, RECORD_TTL_S)
          .zadd(this.workers, Date.now(), this.workerId);
      if (ended.length > 0) commands.srem(this.ownRuns, ...ended);
      await commands.exec();
    } catch {
      // Redis did not answer: those runs' crashes go uncharged, within BullMQ's stall limit.
    }
  }

  /** The run comes back from a stalled job: count the crash of each worker that lost it, say what is known. */
  async takeOver(runId: string): Promise<CrashEvidence> {
    const [charged, shared] = (await TAKE_OVER.run(
      await this.redis(),
      [this.crashesKey(runId), this.workers],
      [runId, this.workerId, this.base, Date.now() - RECORD_TTL_S * 1000, CRASHES_TTL_S],
    )) as [number, number];
    return { charged, shared };
  }

  /** The run went through a pass alone without a crash: whatever crashed with it before was not its doing. */
  forgive(runId: string) {
    void this.redis()
      .then((redis) =>
        redis
          .multi()
          .hset(this.crashesKey(runId), { charged: 0, shared: 0 })
          .expire(this.crashesKey(runId), CRASHES_TTL_S)
          .exec(),
      )
      .catch(() => {});
  }

  /** This worker is alive (a heartbeat's commands); workers silent for longer than a record lasts are dropped. */
  keep(beat: ChainableCommander, now: number) {
    return beat
      .zadd(this.workers, now, this.workerId)
      .zremrangebyscore(this.workers, '-inf', now - RECORD_TTL_S * 1000)
      .expire(this.ownRuns, RECORD_TTL_S);
  }

  private crashesKey(runId: string) {
    return `${this.base}runs:${runId}`;
  }
}
