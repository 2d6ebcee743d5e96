import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { lastRecovery, type RecoveryReport } from './recovery.ts';
import type { RunJobData } from './run-queue.ts';

/** A worker is counted as consuming while its heartbeat is younger than this. */
export const HEARTBEAT_TTL_MS = 15_000;
/** Also how often a worker tells dispatch how many runs it takes, and renews its runs' leases. */
export const HEARTBEAT_INTERVAL_MS = 1_000;

/** A BullMQ queue or worker: it names the keys under its queue (its prefix, its queue's name). */
type QueueKeys = Pick<Queue, 'toKey'>;

/** The live workers of a queue (zset: worker -> last heartbeat), beside BullMQ's own keys. */
export const heartbeatKey = (queue: QueueKeys) => queue.toKey('tributary:workers');

/** Each live worker's concurrency (hash: worker -> slots): what fair dispatch fills. */
export const workerSlotsKey = (queue: QueueKeys) => `${heartbeatKey(queue)}:slots`;

/** BullMQ types its connection abstractly; with ioredis connections it is an ioredis client. */
export const ioredisOf = async (client: Promise<unknown>) => (await client) as Redis;

export interface QueueReport {
  redis: 'ok' | string;
  maxmemoryPolicy: string;
  liveWorkers: number;
  /** Jobs handed to workers and not taken yet (the tenants' backlogs wait in their lanes, not here). */
  waiting: number;
  /** How long the oldest of them has waited: minutes mean workers stopped taking jobs. */
  oldestWaitingMs: number;
  /** The last recovery from lost Redis data, while it runs and for a day after. */
  recovery?: RecoveryReport;
}

/** What readiness reports of Redis and the run queue. */
export async function inspectQueue(queue: Queue<RunJobData>, prefix: string): Promise<QueueReport> {
  const client = await ioredisOf(queue.client);
  await client.ping();
  // Managed Redis may forbid CONFIG: report it rather than fail.
  const policy = await client.config('GET', 'maxmemory-policy').then(
    (reply: unknown) => String((reply as string[])[1]),
    () => 'unknown (CONFIG not allowed)',
  );
  const liveWorkers = await client.zcount(heartbeatKey(queue), Date.now() - HEARTBEAT_TTL_MS, '+inf');
  const waiting = await queue.getWaitingCount();
  const [oldest] = waiting > 0 ? await queue.getJobs(['wait'], 0, 0, true) : [];
  const recovery = await lastRecovery(client, prefix);
  return {
    redis: 'ok',
    maxmemoryPolicy: policy,
    liveWorkers,
    waiting,
    oldestWaitingMs: oldest ? Date.now() - oldest.timestamp : 0,
    ...(recovery && { recovery }),
  };
}
