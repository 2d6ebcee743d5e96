import type { Logger } from 'pino';
import type { AlertStore, LogStore, RetentionStore } from '../engine/store/index.ts';
import { PARTITIONS_AHEAD_MS } from '../engine/store/sql/index.ts';
import type { Config } from './config/config.ts';

/**
 * Now and every `PRUNE_INTERVAL_MS` (every worker does: a second sweep finds nothing left to do): makes the
 * partitions of the week ahead, drops history past its retention, and deletes run log lines and alerts sent
 * past theirs.
 */
export function schedulePruning(
  store: LogStore & AlertStore & RetentionStore,
  config: Pick<Config, 'runLogRetentionDays' | 'pruneIntervalMs'>,
  logger: Logger,
): NodeJS.Timeout {
  const retentionDays = config.runLogRetentionDays;
  const prune = async () => {
    const now = Date.now();
    const before = new Date(now - retentionDays * 86_400_000).toISOString();
    await store.preparePartitions(now, now + PARTITIONS_AHEAD_MS);
    const history = await store.pruneExpired(now);
    const [lines, alerts] = await Promise.all([store.pruneRunLogs(before), store.pruneAlerts(before)]);
    if (history.partitionsDropped + history.rowsDeleted + lines + alerts > 0)
      logger.info({ ...history, lines, alerts }, 'pruned history, run log lines and alerts past their retention');
  };
  const sweep = () => void prune().catch((error) => logger.warn({ err: error }, 'could not prune history'));
  sweep();
  return setInterval(sweep, config.pruneIntervalMs).unref();
}
