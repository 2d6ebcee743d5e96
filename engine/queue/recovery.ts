import type { Redis } from 'ioredis';
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

export const epochKey = (prefix: string) => `${prefix}:tributary:epoch`;
export const recoveryKey = (prefix: string) => `${prefix}:tributary:recovery`;

export interface RecoveryOptions {
  prefix: string;
  /** How often Redis is checked for its epoch. */
  intervalMs: number;
  reconciler: QueueReconciler;
  /** Registers every active flow's schedule again; returns how many flows it looked at. */
  syncSchedules: () => Promise<number>;
  /** Writes every tenant's own limits to Redis again. */
  syncTenantLimits: () => Promise<void>;
  logger: Logger;
}

/**
 * Redis holds the queues and schedules; the store holds what was accepted. When Redis comes back
 * without its data (restarted without persistence, a failover to a replica that lagged), the epoch
 * key written when its data began is gone. The worker process that notices first writes a new
 * epoch and recovers: the tenants' own limits are written again, every unfinished run whose job is
 * nowhere is queued again, oldest first and through the tenants' lanes, and every active flow's
 * schedule is registered again. Its progress is
 * in Redis for readiness to show. On a deployment's very first start there is no epoch either:
 * recovering then finds nothing to do.
 */
export class QueueRecovery {
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;

  constructor(
    private readonly redis: () => Promise<Redis>,
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
    const key = epochKey(this.options.prefix);
    // An epoch is there: ours, or one another process wrote when it noticed the loss (and recovers).
    if ((await redis.get(key)) !== null) return;
    if ((await redis.set(key, newId(), 'NX')) !== 'OK') return;
    await this.recover(redis);
  }

  private async recover(redis: Redis) {
    const { logger, reconciler, syncSchedules, syncTenantLimits, prefix } = this.options;
    const report: RecoveryReport = {
      since: new Date().toISOString(),
      finishedAt: null,
      runsLooked: 0,
      runsRequeued: 0,
      runsEnded: 0,
      flowsScheduled: null,
    };
    const save = () => redis.set(recoveryKey(prefix), JSON.stringify(report), 'EX', REPORT_TTL_SECONDS);
    logger.info('Redis holds no epoch (its data was lost, or this deployment is new): recovering from the store');
    await save();
    try {
      // First, so that runs queued again are dispatched by their tenants' weights and limits.
      await syncTenantLimits();
      await reconciler.recover(async (done) => {
        report.runsLooked = done.looked;
        report.runsRequeued = done.requeued;
        report.runsEnded = done.ended;
        await save();
      });
      report.flowsScheduled = await syncSchedules();
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
export async function lastRecovery(redis: Redis, prefix: string): Promise<RecoveryReport | undefined> {
  const raw = await redis.get(recoveryKey(prefix));
  return raw ? (JSON.parse(raw) as RecoveryReport) : undefined;
}
