import type { Queue } from 'bullmq';
import { NotFoundError } from '../model/index.ts';
import { HEARTBEAT_TTL_MS, heartbeatKey } from './heartbeats.ts';
import { ioredisOf } from '../redis/index.ts';
import type { RunQueue } from './run-queue.ts';

/** The job states an operator sees counted. */
export const jobStates = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
  'paused',
] as const;

export interface QueueInfo {
  name: string;
  paused: boolean;
  counts: Record<(typeof jobStates)[number], number>;
  /** Workers whose heartbeat is fresh. */
  workers: number;
  /** Runs waiting in the tenants' lanes for their turn (run queue only): not jobs yet. */
  backlog: { runs: number; tenants: Array<{ tenant: string; runs: number }> };
}

/** The tenants with the most waiting runs that a queue's description lists. */
const BACKLOG_TENANTS = 20;

/**
 * What operators do to the queues themselves (every tenant's jobs): look, pause, resume, retry
 * failed jobs, clean finished ones. Runs live in the store; these act on jobs only.
 */
export class QueueAdmin {
  private readonly queues: Map<string, Queue>;

  constructor(
    private readonly runs: RunQueue,
    others: Queue[],
  ) {
    this.queues = new Map([...runs.queues, ...others].map((queue) => [queue.name, queue]));
  }

  list(): Promise<QueueInfo[]> {
    return Promise.all([...this.queues.values()].map((queue) => this.info(queue)));
  }

  describe(name: string): Promise<QueueInfo> {
    return this.info(this.find(name));
  }

  async pause(name: string): Promise<QueueInfo> {
    await this.find(name).pause();
    return this.describe(name);
  }

  async resume(name: string): Promise<QueueInfo> {
    await this.find(name).resume();
    return this.describe(name);
  }

  /** Run jobs workers are running now, in every group of the run path. */
  async activeRuns(): Promise<number> {
    const counts = await Promise.all(this.runs.queues.map((queue) => queue.getActiveCount()));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** Moves failed jobs back to waiting; returns how many there were. */
  async retryFailed(name: string): Promise<number> {
    const queue = this.find(name);
    const count = await queue.getFailedCount();
    await queue.retryJobs({ state: 'failed' });
    return count;
  }

  /** Removes finished jobs older than the grace period; returns how many. */
  async clean(
    name: string,
    options: { state: 'completed' | 'failed'; graceMs: number; limit: number },
  ): Promise<number> {
    return (await this.find(name).clean(options.graceMs, options.limit, options.state)).length;
  }

  private find(name: string): Queue {
    const queue = this.queues.get(name);
    if (!queue) throw new NotFoundError(`no queue ${name}; there are ${[...this.queues.keys()].join(', ')}`);
    return queue;
  }

  private async info(queue: Queue): Promise<QueueInfo> {
    const counts = await queue.getJobCounts(...jobStates);
    const redis = await ioredisOf(queue.client);
    return {
      name: queue.name,
      paused: await queue.isPaused(),
      counts: Object.fromEntries(jobStates.map((state) => [state, counts[state] ?? 0])) as QueueInfo['counts'],
      workers: await redis.zcount(heartbeatKey(queue), Date.now() - HEARTBEAT_TTL_MS, '+inf'),
      backlog: await this.backlog(queue),
    };
  }

  /** The lanes' backlog of a run queue's group (none for other queues). */
  private async backlog(queue: Queue): Promise<QueueInfo['backlog']> {
    const group = this.runs.groups.find((candidate) => candidate.queue === queue);
    if (!group) return { runs: 0, tenants: [] };
    const byTenant = Object.entries(await group.lanes.backlog()).map(([tenant, runs]) => ({ tenant, runs }));
    return {
      runs: byTenant.reduce((sum, { runs }) => sum + runs, 0),
      tenants: byTenant.sort((a, b) => b.runs - a.runs).slice(0, BACKLOG_TENANTS),
    };
  }
}
