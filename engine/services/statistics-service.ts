import { ValidationError } from '../model/index.ts';
import type { Intake } from '../intake/index.ts';
import type { Store } from '../store/index.ts';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
/** Longest range per interval: at most 744 hourly or 400 daily buckets per flow. */
export const MAX_STATISTICS_RANGE_MS = { hour: 31 * DAY_MS, day: 400 * DAY_MS } as const;

/** A range of statistics asked for: the last 24 h unless `from` or `to` say otherwise. */
export interface StatisticsRange {
  from?: string;
  to?: string;
  interval: 'hour' | 'day';
  flowId?: string;
}

/** What a tenant's runs add up to: counts and durations over time, and the tenant at a glance. */
export class StatisticsService {
  constructor(
    private readonly store: Store,
    private readonly intake: Pick<Intake, 'quota'>,
  ) {}

  /** Runs per status and their durations, by hour or day, from the rollups; field errors from `$`. */
  over(tenantId: string, range: StatisticsRange) {
    const to = range.to ? Date.parse(range.to) : Date.now();
    const from = range.from ? Date.parse(range.from) : to - DAY_MS;
    if (from >= to) throw new ValidationError('Invalid range', [{ path: '$.from', message: 'must be before to' }]);
    const longest = MAX_STATISTICS_RANGE_MS[range.interval];
    if (to - from > longest) {
      const message = `is more than ${longest / DAY_MS} days before to (interval ${range.interval})`;
      throw new ValidationError('Range too long', [{ path: '$.from', message }]);
    }
    return this.store.statistics(tenantId, {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      interval: range.interval,
      flowId: range.flowId,
    });
  }

  /**
   * The tenant at a glance: active flows, the last 24 h of runs and their failure rate, the backlog, each flow's
   * last error, its intake quota and what it keeps against its limits.
   */
  async summary(tenantId: string) {
    const [backlog, health, quota, state] = await Promise.all([
      this.store.backlog(tenantId, new Date(Date.now() - DAY_MS).toISOString()),
      this.store.flowHealth(tenantId),
      this.intake.quota(tenantId),
      this.store.tenantUsage(tenantId),
    ]);
    const { held, queued, running, waiting, failed, ...others } = backlog.runs;
    const finished = failed + Object.values(others).reduce((sum, n) => sum + n, 0);
    return {
      activeFlows: health.activeFlows,
      last24h: { runs: backlog.runs, failureRate: finished === 0 ? null : failed / finished },
      backlog: { held, queued, running, waiting },
      oldestWaiting: backlog.oldestWaiting,
      lastErrors: health.lastErrors,
      quota,
      state,
    };
  }
}
