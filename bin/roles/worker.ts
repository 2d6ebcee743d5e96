import { RUN_PAGES_PATH, RunPageLinks } from '../../api/auth/index.ts';
import { AlertWatcher } from '../../engine/alerts/index.ts';
import { ActionRunner } from '../../engine/plugins/index.ts';
import { ENQUEUE_TIMEOUT_MS, ioredisOf } from '../../engine/redis/index.ts';
import { QueueReconciler, QueueRecovery, ReplayRunner } from '../../engine/background/index.ts';
import { enqueueRuns, RunWorker, runJob, type TenantMoves, TickWorker } from '../../engine/queue/index.ts';
import { CompiledFlowCache, Executor } from '../../engine/runtime/index.ts';
import { workerConcurrency } from '../config/config.ts';
import { schedulePruning } from '../pruning.ts';
import type { RedisTarget } from '../redis.ts';
import type { SharedParts } from './shared.ts';

/** How often a worker looks at the moves of tenants between slot groups (TenantMoves): a moving tenant's runs wait. */
const MOVE_STEP_MS = 250;

/** A worker role: runs, schedule ticks, the reconciler and recovery, bulk replays, alerts, moves, pruning. */
export class WorkerRole {
  private constructor(
    private readonly worker: RunWorker,
    private readonly ticks: TickWorker,
    private readonly reconciler: QueueReconciler,
    private readonly recovery: QueueRecovery,
    private readonly replays: ReplayRunner,
    private readonly alerts: AlertWatcher,
    private readonly moves: TenantMoves,
    private readonly pruning: NodeJS.Timeout,
  ) {}

  /** `servesTheApi`: the API role runs in this process too (`serve`), and the worker takes fewer runs at once. */
  static async start(shared: SharedParts, redis: RedisTarget, servesTheApi: boolean): Promise<WorkerRole> {
    const { config, logger, workerStore: store, queue, compile, keyring, metrics } = shared;
    const executor = new Executor({
      store,
      actions: new ActionRunner(store, compile.sandbox),
      flows: new CompiledFlowCache(store, compile),
      keyring,
      logger,
      http: shared.outbound,
      maxOutputBytes: config.maxStepOutputBytes,
      recordExchanges: config.recordExchanges === 'all',
      maxRetryDelayMs: config.maxRetryDelayMs,
      enqueue: (runs) => enqueueRuns(store, queue, runs.map(runJob)),
      wake: (tenantId, runId) => queue.wake(tenantId, runId),
      tracer: shared.tracer,
    });
    const worker = new RunWorker(executor, store, queue, {
      connection: redis.connection('worker'),
      concurrency: workerConcurrency(config, servesTheApi),
      lockDurationMs: config.workerLockMs,
      stalledIntervalMs: config.workerStalledIntervalMs,
      logger,
      metrics,
    });
    await worker.start();
    const ticks = new TickWorker(store, queue, shared.schedules, {
      connection: redis.connection('worker'),
      prefix: config.redisPrefix,
      logger,
    });
    await ticks.start();
    const pruning = schedulePruning(store, config, logger);
    const reconciler = new QueueReconciler(queue, store, {
      graceMs: Math.max(config.workerLockMs, 2 * ENQUEUE_TIMEOUT_MS),
      intervalMs: 2 * config.workerStalledIntervalMs,
      logger,
      metrics,
    });
    reconciler.start();
    const replays = new ReplayRunner(store, queue, logger);
    replays.start();
    const links = new RunPageLinks(keyring);
    const alerts = new AlertWatcher({
      store,
      keyring,
      http: shared.outbound,
      logger,
      checkEveryMs: config.alertCheckIntervalMs,
      timeoutMs: config.alertTimeoutMs,
      // An alert's link opens the run read-only: it goes to a chat or a pager, not to a client.
      runUrl: (tenantId, runId) => {
        const expiresAt = Math.floor(Date.now() / 1000) + config.alertLinkSeconds;
        return `${shared.url()}${RUN_PAGES_PATH}/${links.token({ tenantId, runId, expiresAt, canReplay: false })}`;
      },
    });
    alerts.start();
    const recovery = new QueueRecovery(() => ioredisOf(queue.queues[0].client), {
      prefix: config.redisPrefix,
      groups: queue.groups.length,
      intervalMs: config.recoveryIntervalMs,
      reconciler,
      syncSchedules: () => shared.schedules.syncAll(),
      syncTenantLimits: () => shared.tenantLimits.syncAll(store),
      restoreMoves: () => shared.moves.restoreMarks(),
      logger,
    });
    await recovery.start();
    shared.moves.start(MOVE_STEP_MS);
    return new WorkerRole(worker, ticks, reconciler, recovery, replays, alerts, shared.moves, pruning);
  }

  /** The background loops first, then the runs in flight (finished, or handed back after `graceMs`). */
  async close(graceMs: number) {
    clearInterval(this.pruning);
    await this.ticks.close();
    await this.recovery.close();
    await this.replays.close();
    await this.alerts.close();
    await this.moves.close();
    await this.reconciler.close();
    await this.worker.close(graceMs);
  }
}
