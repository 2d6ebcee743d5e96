import type { Queue } from 'bullmq';
import { lastRecovery, type RecoveryReport } from './recovery.ts';
import type { RunJobData } from './run-queue.ts';
import { heartbeatKey, HEARTBEAT_TTL_MS, ioredisOf } from './heartbeats.ts';

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
