import { setMaxListeners } from 'node:events';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { newId } from '../model/index.ts';
import type { Executor, PassOutcome } from '../runtime/index.ts';
import type { RunStore } from '../store/index.ts';
import type { EngineMetrics } from '../telemetry/index.ts';
import { CrashLedger, type CrashEvidence } from './crash-ledger.ts';
import { HEARTBEAT_INTERVAL_MS, HEARTBEAT_TTL_MS, heartbeatKey, workerSlotsKey } from './heartbeats.ts';
import { ioredisOf } from '../redis/index.ts';
import type { QueueOptions, RunGroup, RunJobData, RunQueue } from './run-queue.ts';

/**
 * A job whose worker died is taken over (its completed nodes are not run again); a run is charged with the crash
 * only when that worker ran nothing else (CrashLedger), and fails when charged once more than this.
 */
export const MAX_CHARGED_CRASHES = 3;
/** A run that shared this many crashes with other runs next runs alone, so that its next crash is its own. */
const SHARED_CRASHES_BEFORE_ALONE = 2;
/**
 * Whatever the evidence, BullMQ fails a job whose worker was lost once more than this (the queue reconciler then
 * ends its run): the bound for crashes the ledger could not see.
 */
export const MAX_TAKEOVERS = 10;
/**
 * How long a run that came back while its tenant holds every unreserved slot waits before it tries again, and how
 * often: then it takes a slot whatever its tenant holds (a tenant's retries are never starved by its own backlog).
 */
const DEFERRED_MS = 1000;
const MAX_DEFERRALS = 30;
/**
 * How long a run whose pass failed outside the flow (BullMQ tries it again after a backoff) keeps its concurrency
 * key: longer than BullMQ's longest backoff (run-queue.ts), and given back at once when BullMQ gives up.
 */
const FAULT_HOLD_MS = 30 * 60_000;

export interface WorkerOptions extends Pick<QueueOptions, 'connection'> {
  concurrency: number;
  /** How long a job's lock lasts without renewal; a killed worker's job is taken over after it. */
  lockDurationMs: number;
  /** How often workers look for jobs whose lock expired. */
  stalledIntervalMs: number;
  logger: Logger;
  metrics: EngineMetrics;
}

/**
 * A worker asks for this long's worth of runs beyond its slots (at the rate it ends them), so that
 * one finishing a run finds the next waiting; only so much, so that a tenant arriving later waits
 * behind few others' runs: at 1,500 runs/s about 60, at 5 runs/s none.
 */
const PREFETCH_MS = 40;

/**
 * How often a worker dispatches without being asked: for runs queued while no worker had room,
 * leases that expired, a queue resumed.
 */
const DISPATCH_INTERVAL_MS = 250;

/** BullMQ's priority of a run's job once it has slept: any but 0 (the wait list's). */
const BACK_FROM_SLEEP = 1;

/**
 * A job sleeps until `until` without spending an attempt. It comes back prioritized, in BullMQ's set that workers
 * read once the wait list is empty, rather than on the wait list: the runs fair dispatch hands out (a quiet tenant's
 * on a reserved slot) do not queue behind another tenant's hundreds of runs waking at once (fair-dispatch.lua).
 */
async function sleep(job: Job<RunJobData>, until: number, token: string | undefined): Promise<never> {
  if (job.priority !== BACK_FROM_SLEEP) await job.changePriority({ priority: BACK_FROM_SLEEP });
  await job.moveToDelayed(until, token);
  throw new DelayedError();
}

/** What a worker process holds in one slot group of the run path. */
interface GroupWorker {
  group: RunGroup;
  worker: Worker<RunJobData>;
  /** Its heartbeat and slots in the group, which the group's dispatch fills. */
  keys: { heartbeats: string; slots: string };
  /** Its share of the process's concurrency, as last given (shareSlots). */
  slots: number;
  /** The runs of each tenant it has taken and not yet given back (deferring, executing). */
  taken: Map<string, number>;
}

/**
 * The process's concurrency shared between the groups: a slot each (a run arriving in a quiet group starts at once),
 * the rest by the tenants waiting in each, so that tenants are served alike whichever group they are in, and a
 * group alone with work gets nearly every slot. Nobody waiting anywhere: evenly.
 */
export function shareSlots(concurrency: number, tenantsWaiting: number[]): number[] {
  const groups = tenantsWaiting.length;
  const spare = Math.max(0, concurrency - groups);
  const total = tenantsWaiting.reduce((sum, waiting) => sum + waiting, 0);
  const weights = total === 0 ? tenantsWaiting.map(() => 1) : tenantsWaiting;
  const weight = total === 0 ? groups : total;
  const exact = weights.map((w) => (spare * w) / weight);
  const slots = exact.map((share) => 1 + Math.floor(share));
  // The slots rounding left over go to the largest remainders.
  let left = spare - exact.reduce((sum, share) => sum + Math.floor(share), 0);
  for (const index of exact.map((_, i) => i).sort((a, b) => (exact[b] % 1) - (exact[a] % 1))) {
    if (left-- <= 0) break;
    slots[index]++;
  }
  return slots;
}

/**
 * Takes run jobs from every group of the run path and hands them to the executor; translates its outcome into
 * BullMQ terms.
 */
export class RunWorker {
  private readonly groups: GroupWorker[];
  private readonly shutdown = new AbortController();
  private readonly id = newId();
  private heartbeat?: NodeJS.Timeout;
  private dispatchTimer?: NodeJS.Timeout;
  /** Runs executing here, and their groups: their leases are renewed with the heartbeat. */
  private readonly executing = new Map<string, { job: RunJobData; at: GroupWorker }>();
  private readonly ledger: CrashLedger;
  /** While a suspect of a crash runs alone here, other runs wait for it to end. */
  private isolating?: Promise<void>;
  /** Called when the last run executing here ends (a suspect waits for it). */
  private whenIdle?: () => void;
  /** Runs ended since the last heartbeat, and the runs asked for beyond the slots. */
  private endedSinceBeat = 0;
  private lastBeat = performance.now();
  private prefetch: number;

  constructor(
    private readonly executor: Executor,
    private readonly store: RunStore,
    private readonly runs: RunQueue,
    private readonly options: WorkerOptions,
  ) {
    const slots = shareSlots(
      options.concurrency,
      runs.groups.map(() => 0),
    );
    this.groups = runs.groups.map((group, index) => {
      const at: GroupWorker = {
        group,
        worker: new Worker<RunJobData>(group.queue.name, (job, token) => this.process(job, token, at), {
          connection: options.connection,
          prefix: group.slot,
          concurrency: slots[index],
          lockDuration: options.lockDurationMs,
          stalledInterval: options.stalledIntervalMs,
          maxStalledCount: MAX_TAKEOVERS,
          autorun: false,
        }),
        keys: { heartbeats: heartbeatKey(group.queue), slots: workerSlotsKey(group.queue) },
        slots: slots[index],
        taken: new Map(),
      };
      at.worker.on('failed', (job, error) => void this.onFailed(job, error, at));
      at.worker.on('error', (error) => options.logger.error({ err: error }, 'worker error'));
      at.worker.on('stalled', () => options.metrics.jobStalled(group.queue.name));
      return at;
    });
    // One ledger for every group (its keys in the first's slot): a crash is charged by all the runs executing here.
    const [first] = this.groups;
    this.ledger = new CrashLedger(() => ioredisOf(first.worker.client), first.worker, this.id);
    this.prefetch = Math.ceil(options.concurrency / 4);
    // Every node in flight that asked for an abort signal listens to the shutdown: as many as the concurrency.
    setMaxListeners(options.concurrency + 10, this.shutdown.signal);
  }

  async start() {
    for (const { worker } of this.groups) void worker.run();
    await Promise.all(this.groups.map(({ worker }) => worker.waitUntilReady()));
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS).unref();
    this.dispatchTimer = setInterval(() => void this.runs.dispatch(), DISPATCH_INTERVAL_MS).unref();
    void this.runs.dispatch();
  }

  /**
   * Readiness counts workers whose heartbeat is fresh, and dispatch fills their slots; a closed or
   * stopped worker stops beating. A worker that beats but no longer receives jobs (a half-open
   * blocking connection) shows up in readiness as the age of the oldest waiting run instead. Each beat shares the
   * slots between the groups again, by the tenants waiting in each.
   */
  private async beat() {
    if (this.groups.some(({ worker }) => !worker.isRunning() || worker.closing)) return;
    try {
      const now = Date.now();
      const looks = await Promise.all(
        this.groups.map(async ({ worker, keys, group }) => {
          const client = await ioredisOf(worker.client);
          const [gone, waiting] = await Promise.all([
            client.zrangebyscore(keys.heartbeats, '-inf', now - HEARTBEAT_TTL_MS * 4),
            this.groups.length > 1 ? client.hlen(group.lanes.backlogKey) : 0,
          ]);
          return { client, gone, waiting };
        }),
      );
      const slots = shareSlots(
        this.options.concurrency,
        looks.map(({ waiting }) => waiting),
      );
      const prefetch = this.nextPrefetch();
      await Promise.all(
        this.groups.map(async (at, index) => {
          const { client, gone } = looks[index];
          at.slots = slots[index];
          if (!this.isolating) at.worker.concurrency = at.slots;
          const taken = at.slots + Math.round((prefetch * at.slots) / this.options.concurrency);
          const beat = client
            .multi()
            .zadd(at.keys.heartbeats, now, this.id)
            .hset(at.keys.slots, { [this.id]: taken, [`${this.id}:c`]: at.slots });
          if (gone.length > 0)
            beat
              .zrem(at.keys.heartbeats, ...gone)
              .hdel(at.keys.slots, ...gone.flatMap((worker) => [worker, `${worker}:c`]));
          await (index === 0 ? this.ledger.keep(beat, now) : beat).exec();
          const executing = [...this.executing.values()].flatMap(({ job, at: there }) => (there === at ? [job] : []));
          await at.group.lanes.renew(executing);
        }),
      );
    } catch (error) {
      this.options.logger.warn({ err: error }, 'worker heartbeat failed');
    }
  }

  /**
   * PREFETCH_MS worth of runs at the rate they ended since the last beat (smoothed), at most the
   * concurrency; none when runs end slower than one per PREFETCH_MS (a run arriving then waits for
   * the next slot to free, not behind a prefetched one).
   */
  private nextPrefetch(): number {
    const elapsed = performance.now() - this.lastBeat;
    const wanted = (this.endedSinceBeat / elapsed) * PREFETCH_MS;
    this.lastBeat += elapsed;
    this.endedSinceBeat = 0;
    this.prefetch = Math.min(this.options.concurrency, Math.round((this.prefetch + wanted) / 2));
    return this.prefetch;
  }

  private async process(job: Job<RunJobData>, token: string | undefined, at: GroupWorker) {
    const { tenantId } = job.data;
    // Counted as soon as taken: of runs taken together, each sees those before it.
    const taken = (at.taken.get(tenantId) ?? 0) + 1;
    at.taken.set(tenantId, taken);
    try {
      return await this.take(job, token, at, taken);
    } finally {
      const left = (at.taken.get(tenantId) ?? 1) - 1;
      if (left === 0) at.taken.delete(tenantId);
      else at.taken.set(tenantId, left);
    }
  }

  /** A job taken, the `taken`th of its tenant's here. */
  private async take(job: Job<RunJobData>, token: string | undefined, at: GroupWorker, taken: number) {
    const { runId } = job.data;
    // A dispatched run holds its leases; one back from a retry's wait or a dead worker takes them again, unless its
    // tenant already holds every slot but the reserved ones: it then waits a moment, leaving its slot to others.
    // Here first: dispatch may still count the slots of a worker that just died (DISPATCH_TTL_MS) as kept for others.
    if (job.attemptsStarted > 1) {
      const deferrals = job.data.deferrals ?? 0;
      const deferrable = deferrals < MAX_DEFERRALS;
      const crowded = deferrable && taken > at.group.lanes.unreserved(at.slots);
      const deferred = crowded
        ? [runId]
        : await at.group.lanes.acquire([job.data], deferrable).catch((error) => {
            this.options.logger.warn({ err: error, runId }, 'could not count the run against its limits');
            return [];
          });
      if (deferred.length > 0) {
        await job.updateData({ ...job.data, deferrals: deferrals + 1 });
        return sleep(job, Date.now() + DEFERRED_MS, token);
      }
    }
    const evidence = job.stalledCounter > 0 ? await this.takeOver(runId) : undefined;
    if (evidence && evidence.charged > MAX_CHARGED_CRASHES) return this.failCrashing(job.data, evidence, at);
    if (evidence && (evidence.charged > 0 || evidence.shared >= SHARED_CRASHES_BEFORE_ALONE))
      return this.alone(runId, () => this.pass(job, token, at));
    while (this.isolating) await this.isolating;
    return this.pass(job, token, at);
  }

  /** The crash evidence of a run taken over from a lost worker; none when Redis cannot say (BullMQ's limit holds). */
  private takeOver(runId: string): Promise<CrashEvidence | undefined> {
    return this.ledger.takeOver(runId).catch((error) => {
      this.options.logger.warn({ err: error, runId }, "could not record the crash of the run's last worker");
      return undefined;
    });
  }

  /**
   * A suspect of a crash runs with nothing else in this process: taken jobs wait, none is fetched, and those
   * executing end first. Its next crash is then its own; a pass without one clears it.
   */
  private async alone<T>(runId: string, pass: () => Promise<T>): Promise<T> {
    while (this.isolating) await this.isolating;
    let isolated!: () => void;
    this.isolating = new Promise<void>((resolve) => (isolated = resolve));
    for (const { worker } of this.groups) worker.concurrency = 1;
    try {
      while (this.executing.size > 0) await new Promise<void>((resolve) => (this.whenIdle = resolve));
      return await pass();
    } finally {
      this.ledger.forgive(runId);
      for (const at of this.groups) at.worker.concurrency = at.slots;
      this.isolating = undefined;
      isolated();
    }
  }

  /** A run that crashed its worker once too often while running alone fails; it is not taken up again. */
  private async failCrashing(job: RunJobData, evidence: CrashEvidence, at: GroupWorker): Promise<never> {
    const error = {
      kind: 'permanent' as const,
      message:
        `crashed the worker ${evidence.charged} times while running alone (a crash, an out-of-memory kill, or its ` +
        'event loop blocked past WORKER_LOCK_MS); it is not tried again',
    };
    try {
      await this.store.saveProgress(job.tenantId, job.runId, [], { status: 'failed', error });
      this.options.metrics.runAttempt(job.tenantId, 'failed', 0);
    } finally {
      this.ledger.release(job.runId);
      at.group.ended(job, 0);
    }
    throw new UnrecoverableError(error.message);
  }

  /** One pass of the run through the executor, in BullMQ's terms. */
  private async pass(job: Job<RunJobData>, token: string | undefined, at: GroupWorker) {
    const { tenantId, runId } = job.data;
    this.executing.set(runId, { job: job.data, at });
    this.ledger.hold(runId);
    let outcome: PassOutcome;
    let status = 'error';
    // A run that waits keeps its concurrency key until it is back; one that ended gives it up (0).
    let heldUntil = Date.now() + FAULT_HOLD_MS;
    const started = performance.now();
    try {
      outcome = await this.executor.execute(
        job.data,
        this.shutdown.signal,
        (percent) => void job.updateProgress(percent).catch(() => {}),
      );
      status = outcome.kind === 'finished' ? outcome.status : outcome.kind;
      heldUntil = outcome.kind === 'wait' ? Date.now() + outcome.delayMs : 0;
    } finally {
      this.options.metrics.runAttempt(tenantId, status, (performance.now() - started) / 1000);
      this.executing.delete(runId);
      if (this.executing.size === 0) this.whenIdle?.();
      this.ledger.release(runId);
      this.endedSinceBeat++;
      at.group.ended(job.data, heldUntil);
    }
    // Not a failure: the job sleeps without spending a BullMQ attempt.
    if (outcome.kind === 'wait') return sleep(job, Date.now() + outcome.delayMs, token);
    if (outcome.kind === 'finished' && outcome.status === 'failed') {
      // The run is already recorded as failed; fail the job too so the dashboard shows it, without retries.
      throw new UnrecoverableError(outcome.error?.message ?? 'run failed');
    }
    return outcome.kind === 'finished' ? { status: outcome.status } : { status: 'gone' };
  }

  /**
   * When BullMQ gives up on a job (attempts spent, or stalled too often), the run records why; a finished run stays
   * as it is.
   */
  private async onFailed(job: Job<RunJobData> | undefined, error: Error, at: GroupWorker) {
    if (!job || error instanceof UnrecoverableError) return;
    try {
      // A failed attempt that will be retried leaves the job waiting or delayed; only a final failure leaves it failed.
      if ((await job.getState()) !== 'failed') return;
      const reason = {
        kind: 'retryable' as const,
        message: `gave up after ${job.attemptsMade} attempts: ${error.message}`,
      };
      await this.store.saveProgress(job.data.tenantId, job.data.runId, [], { status: 'failed', error: reason });
      // Its concurrency key, kept while BullMQ would try again, goes to the next run of the key.
      at.group.ended(job.data, 0);
    } catch (failure) {
      this.options.logger.error({ err: failure, runId: job.data.runId }, 'could not record the failed run');
    }
  }

  /**
   * Stop taking jobs and let those in flight finish; after `graceMs` their operations are aborted
   * (they record a retry). Checkpoints make a later takeover safe either way.
   */
  async close(graceMs = 10_000) {
    clearInterval(this.heartbeat);
    clearInterval(this.dispatchTimer);
    const timer = setTimeout(() => this.shutdown.abort(new Error('worker shutting down')), graceMs);
    try {
      await Promise.all(
        this.groups.map(async ({ worker, keys }) => {
          const client = await ioredisOf(worker.client);
          await client
            .multi()
            .zrem(keys.heartbeats, this.id)
            .hdel(keys.slots, this.id, `${this.id}:c`)
            .exec()
            .catch(() => {});
        }),
      );
      await Promise.all(this.groups.map(({ worker }) => worker.close()));
    } finally {
      clearTimeout(timer);
    }
  }
}
