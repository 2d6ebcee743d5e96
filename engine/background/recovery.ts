import { type RedisClient, runsSlot, ticksSlot } from '../redis/index.ts';
import type { Logger } from 'pino';
import { newId } from '../model/index.ts';
import type { QueueReconciler } from './reconciler.ts';

/** What readiness shows of the last recovery: while it runs, and for a day after. */
export interface RecoveryReport {
  since: string;
  finishedAt: string | null;
  runsLooked: number;
  runsRequeued: number;
  runsEnded: number;
  flowsScheduled: number | null;
  error?: string;
}

const REPORT_TTL_SECONDS = 24 * 3600;

/** Written when a slot's data begins: gone, the data went with it. Each slot group has its own (key-slots.ts). */
const epochKey = (slot: string) => `${slot}:tributary:epoch`;
const recoveryKey = (prefix: string) => `${runsSlot(prefix)}:tributary:recovery`;

export interface RecoveryOptions {
  prefix: string;
  /** The run path's slot groups (RUN_GROUPS): each has its epoch. */
  groups: number;
  /** How often Redis is checked for its epoch. */
  intervalMs: number;
  reconciler: QueueReconciler;
  /** Registers every active flow's schedule again; returns how many flows it looked at. */
  syncSchedules: () => Promise<number>;
  /** Writes every tenant's own limits to Redis again. */
  syncTenantLimits: () => Promise<void>;
  /** Marks the tenants operators moved between groups again (TenantMoves.restoreMarks). */
  restoreMoves: () => Promise<void>;
  logger: Logger;
}

/**
 * Redis holds the queues and schedules; the store holds what was accepted. When Redis comes back
 * without its data (restarted without persistence, a failover to a replica that lagged), the epoch
 * key written when its data began is gone. On a Redis Cluster the run path's groups and the schedules live in
 * different slots, perhaps on different masters, and each has its epoch. The worker process that
 * notices first writes a new epoch and recovers what that slot held: for the run queue, the tenants'
 * own limits are written again and every unfinished run whose job is nowhere is queued again, oldest
 * first and through the tenants' lanes; for the schedules, every active flow's schedule is registered
 * again. Its progress is in Redis for readiness to show. On a deployment's very first start there is
 * no epoch either: recovering then finds nothing to do.
 */
export class QueueRecovery {
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;

  constructor(
    private readonly redis: () => Promise<RedisClient>,
    private readonly options: RecoveryOptions,
  ) {}

  async start() {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.options.intervalMs).unref();
  }

  async close() {
    clearInterval(this.timer);
    await this.checking;
  }

  /** Look at the epoch once (one look at a time); recover when it is gone. */
  check(): Promise<void> {
    this.checking ??= this.look()
      .catch((error) => this.options.logger.warn({ err: error }, 'could not check Redis for lost data'))
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async look() {
    const redis = await this.redis();
    const { prefix } = this.options;
    // Every group's epoch is claimed, not only the first lost one's: each loss is recovered once.
    let runsLost = false;
    for (let group = 0; group < this.options.groups; group++)
      if (await this.claimEpoch(redis, epochKey(runsSlot(prefix, group, this.options.groups)))) runsLost = true;
    const schedulesLost = await this.claimEpoch(redis, epochKey(ticksSlot(prefix)));
    if (runsLost || schedulesLost) await this.recover(redis, { runsLost, schedulesLost });
  }

  /**
   * Whether the epoch was gone and this process wrote the new one, and so recovers. An epoch that is there
   * is ours, or one another process wrote when it noticed the loss (and recovers).
   */
  private async claimEpoch(redis: RedisClient, key: string): Promise<boolean> {
    if ((await redis.get(key)) !== null) return false;
    return (await redis.set(key, newId(), 'NX')) === 'OK';
  }

  private async recover(redis: RedisClient, lost: { runsLost: boolean; schedulesLost: boolean }) {
    const { logger, reconciler, syncSchedules, syncTenantLimits, restoreMoves, prefix } = this.options;
    const report: RecoveryReport = {
      since: new Date().toISOString(),
      finishedAt: null,
      runsLooked: 0,
      runsRequeued: 0,
      runsEnded: 0,
      flowsScheduled: null,
    };
    const save = () => redis.set(recoveryKey(prefix), JSON.stringify(report), 'EX', REPORT_TTL_SECONDS);
    logger.info(lost, 'Redis holds no epoch (its data was lost, or this deployment is new): recovering from the store');
    await save();
    try {
      if (lost.runsLost) {
        // First, so that runs queued again are dispatched by their tenants' weights and limits, in their groups only.
        await syncTenantLimits();
        await restoreMoves();
        await reconciler.recover(async (done) => {
          report.runsLooked = done.looked;
          report.runsRequeued = done.requeued;
          report.runsEnded = done.ended;
          await save();
        });
      }
      if (lost.schedulesLost) report.flowsScheduled = await syncSchedules();
    } catch (error) {
      report.error = (error as Error).message;
      throw error;
    } finally {
      report.finishedAt = new Date().toISOString();
      await save();
      // A new deployment recovers nothing; lost runs or a failure are worth an operator's look.
      const level = report.runsRequeued > 0 || report.error ? 'warn' : 'info';
      logger[level]({ ...report }, 'recovery from the store finished');
    }
  }
}

/** The last recovery, if one ran in the last day. */
export async function lastRecovery(redis: RedisClient, prefix: string): Promise<RecoveryReport | undefined> {
  const raw = await redis.get(recoveryKey(prefix));
  return raw ? (JSON.parse(raw) as RecoveryReport) : undefined;
}
