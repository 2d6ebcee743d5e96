import { setMaxListeners } from 'node:events';
import { DelayedError, Queue, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { EngineMetrics } from '../telemetry/index.ts';
import type { Executor, PassOutcome } from '../runtime/index.ts';
import type { AcceptedMessage, MessageStore, NewMessage, Run, RunStore } from '../store/index.ts';
import { HEARTBEAT_INTERVAL_MS, HEARTBEAT_TTL_MS, heartbeatKey, workerSlotsKey } from './heartbeats.ts';
import { ioredisOf } from './redis-client.ts';
import { newId } from '../model/index.ts';
import { runsSlot } from './key-slots.ts';
import { RunLanes } from './run-lanes.ts';
import { CrashLedger, type CrashEvidence } from './crash-ledger.ts';

export const RUN_QUEUE = 'runs';

/**
 * A job names its run and the flow version it is pinned to, nothing else: bodies live in the
 * store, secrets never leave it. The version lets a worker prepare the run before reading it.
 */
export interface RunJobData {
  tenantId: string;
  runId: string;
  flowId: string;
  flowVersion: number;
  /** How often the run was deferred, back while its tenant held every unreserved slot (at most MAX_DEFERRALS). */
  deferrals?: number;
}

export const runJob = (run: Pick<Run, 'tenantId' | 'id' | 'flowId' | 'flowVersion'>): RunJobData => ({
  tenantId: run.tenantId,
  runId: run.id,
  flowId: run.flowId,
  flowVersion: run.flowVersion,
});

export interface QueueOptions {
  connection: ConnectionOptions;
  /** Redis key prefix: one per deployment (or per test file); the keys add their slots' hash tags (key-slots.ts). */
  prefix: string;
}

export interface RunQueueOptions extends QueueOptions {
  /** Runs of one tenant executing at once, unless the tenant has a limit of its own; 0 for none. */
  tenantConcurrency: number;
  /** Percent of the live slots kept for tenants running few runs, free while another tenant floods. */
  reservedSlotsPercent: number;
  /** How long a dispatched run counts against its limits without a worker renewing its lease. */
  leaseMs: number;
}

/**
 * Job attempts cover faults outside the flow (the store or Redis unreachable, a crash while
 * recording). Node-level retries are counted in the run's checkpoints and never spend these.
 */
const JOB_ATTEMPTS = 10;

/**
 * BullMQ waits for a connection indefinitely; intake must answer within a sender's window
 * (webhook senders commonly wait about 5 s), so an enqueue that does not complete in time counts as failed.
 */
export const ENQUEUE_TIMEOUT_MS = 3000;

/**
 * A Redis call that must answer within ENQUEUE_TIMEOUT_MS, or fail (BullMQ itself would wait for a connection
 * forever).
 */
export async function withinEnqueueTimeout<T>(call: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Redis did not ${what} within ${ENQUEUE_TIMEOUT_MS} ms`)),
      ENQUEUE_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

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

/** A hand-off is confirmed within this long even when nothing else calls the lanes. */
const CONFIRM_WITHIN_MS = 100;

/**
 * Runs wait in fair lanes (one per tenant and flow, `RunLanes`) and enter BullMQ's queue only as
 * workers free slots, tenants served in turn: one tenant's backlog never sits between another
 * tenant's run and a worker. Every process dispatches: intake when it queues runs, workers when
 * runs end and on a timer.
 */
export class RunQueue {
  readonly queue: Queue<RunJobData>;
  readonly lanes: RunLanes;
  /** Runs whose pass ended, to release with the next dispatch. */
  private endedRuns: RunJobData[] = [];
  private dispatching?: Promise<void>;
  private dispatchAgain = false;
  private confirmTimer?: NodeJS.Timeout;

  constructor(options: RunQueueOptions) {
    this.queue = new Queue<RunJobData>(RUN_QUEUE, {
      connection: options.connection,
      prefix: runsSlot(options.prefix),
      defaultJobOptions: {
        attempts: JOB_ATTEMPTS,
        backoff: { type: 'exponential', delay: 2000 },
        removeOnComplete: { age: 24 * 3600, count: 10_000 },
        removeOnFail: { age: 14 * 24 * 3600 },
      },
    });
    // Errors surface on the calls that fail; an unhandled 'error' event would end the process.
    this.queue.on('error', () => {});
    this.lanes = new RunLanes(() => ioredisOf(this.queue.client), {
      queue: this.queue,
      workersKey: heartbeatKey(this.queue),
      workerSlotsKey: workerSlotsKey(this.queue),
      leaseMs: options.leaseMs,
      tenantConcurrency: options.tenantConcurrency,
      reservedSlotsPercent: options.reservedSlotsPercent,
    });
  }

  /**
   * Takes a waiting run up now instead of at the end of its delay (a caller whose called run ended).
   * A run not delayed (running, or already taken up) is left as it is.
   */
  async wake(runId: string): Promise<void> {
    const job = await this.queue.getJob(runId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => {});
  }

  /**
   * Queue runs in their lanes: once this resolves they are accepted (a run already queued is not
   * queued twice). Those there is room for go to the workers at once.
   */
  async enqueue(jobs: RunJobData[]): Promise<void> {
    if (jobs.length === 0) return;
    const now = await withinEnqueueTimeout(this.lanes.push(jobs), 'take the runs');
    // Not awaited: accepted runs are safe in their lanes, and a failed hand-off is handed out again.
    void this.handOff(now).catch(() => {});
  }

  /** A run's pass ended (whatever its outcome): its leases go with the next dispatch, which it triggers. */
  ended(job: RunJobData) {
    this.endedRuns.push(job);
    void this.dispatch();
  }

  /**
   * Move the runs there is room for from the lanes into the queue. One dispatch at a time per
   * process; calls meanwhile are served by one more after it.
   */
  dispatch(): Promise<void> {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return this.dispatching;
    }
    this.dispatching = (async () => {
      do {
        this.dispatchAgain = false;
        const ended = this.endedRuns.splice(0, 500);
        const runs = ended.length > 0 ? await this.lanes.release(ended) : await this.lanes.dispatch();
        await this.handOff(runs);
        if (this.endedRuns.length > 0) this.dispatchAgain = true;
      } while (this.dispatchAgain);
    })()
      .catch(() => {
        // Redis did not answer: the timer's next dispatch tries again; leases left behind expire.
      })
      .finally(() => (this.dispatching = undefined));
    return this.dispatching;
  }

  /**
   * Add the jobs, then confirm the hand-off with the next call to the lanes (unconfirmed, they are
   * handed out again); when no call comes soon, a dispatch carries it.
   */
  private async handOff(runs: RunJobData[]) {
    if (runs.length === 0) return;
    await this.queue.addBulk(runs.map((data) => ({ name: 'run', data, opts: { jobId: data.runId } })));
    this.lanes.confirm(runs.map((run) => run.runId));
    this.confirmTimer ??= setTimeout(() => {
      this.confirmTimer = undefined;
      if (this.lanes.unconfirmed) void this.dispatch();
    }, CONFIRM_WITHIN_MS).unref();
  }

  close() {
    clearTimeout(this.confirmTimer);
    return this.queue.close();
  }
}

export interface WorkerOptions extends QueueOptions {
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

/** Takes run jobs and hands them to the executor; translates its outcome into BullMQ terms. */
export class RunWorker {
  readonly worker: Worker<RunJobData>;
  private readonly shutdown = new AbortController();
  private readonly id = newId();
  private heartbeat?: NodeJS.Timeout;
  private dispatchTimer?: NodeJS.Timeout;
  /** Runs executing here: their leases are renewed with the heartbeat. */
  private readonly executing = new Map<string, RunJobData>();
  private readonly ledger: CrashLedger;
  /** While a suspect of a crash runs alone here, other runs wait for it to end. */
  private isolating?: Promise<void>;
  /** Called when the last run executing here ends (a suspect waits for it). */
  private whenIdle?: () => void;
  private readonly keys: { heartbeats: string; slots: string };
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
    this.worker = new Worker<RunJobData>(RUN_QUEUE, (job, token) => this.process(job, token), {
      connection: options.connection,
      prefix: runsSlot(options.prefix),
      concurrency: options.concurrency,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
      maxStalledCount: MAX_TAKEOVERS,
      autorun: false,
    });
    this.keys = { heartbeats: heartbeatKey(this.worker), slots: workerSlotsKey(this.worker) };
    this.ledger = new CrashLedger(() => ioredisOf(this.worker.client), this.worker, this.id);
    this.prefetch = Math.ceil(options.concurrency / 4);
    // Every node in flight that asked for an abort signal listens to the shutdown: as many as the concurrency.
    setMaxListeners(options.concurrency + 10, this.shutdown.signal);
    this.worker.on('failed', (job, error) => void this.onFailed(job, error));
    this.worker.on('error', (error) => options.logger.error({ err: error }, 'worker error'));
    this.worker.on('stalled', () => options.metrics.jobStalled(RUN_QUEUE));
  }

  async start() {
    void this.worker.run();
    await this.worker.waitUntilReady();
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS).unref();
    this.dispatchTimer = setInterval(() => void this.runs.dispatch(), DISPATCH_INTERVAL_MS).unref();
    void this.runs.dispatch();
  }

  /**
   * Readiness counts workers whose heartbeat is fresh, and dispatch fills their slots; a closed or
   * stopped worker stops beating. A worker that beats but no longer receives jobs (a half-open
   * blocking connection) shows up in readiness as the age of the oldest waiting run instead.
   */
  private async beat() {
    if (!this.worker.isRunning() || this.worker.closing) return;
    try {
      const client = await ioredisOf(this.worker.client);
      const { heartbeats, slots } = this.keys;
      const now = Date.now();
      const gone = await client.zrangebyscore(heartbeats, '-inf', now - HEARTBEAT_TTL_MS * 4);
      const taken = this.options.concurrency + this.nextPrefetch();
      const beat = client
        .multi()
        .zadd(heartbeats, now, this.id)
        .hset(slots, { [this.id]: taken, [`${this.id}:c`]: this.options.concurrency });
      if (gone.length > 0)
        beat.zrem(heartbeats, ...gone).hdel(slots, ...gone.flatMap((worker) => [worker, `${worker}:c`]));
      await this.ledger.keep(beat, now).exec();
      await this.runs.lanes.renew([...this.executing.values()]);
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

  private async process(job: Job<RunJobData>, token: string | undefined) {
    const { runId } = job.data;
    // A dispatched run holds its leases; one back from a retry's wait or a dead worker takes them again, unless its
    // tenant already holds every slot but the reserved ones: it then waits a moment, leaving its slot to others.
    if (job.attemptsStarted > 1) {
      const deferrals = job.data.deferrals ?? 0;
      const deferred = await this.runs.lanes.acquire([job.data], deferrals < MAX_DEFERRALS).catch((error) => {
        this.options.logger.warn({ err: error, runId }, 'could not count the run against its limits');
        return [];
      });
      if (deferred.length > 0) {
        await job.updateData({ ...job.data, deferrals: deferrals + 1 });
        await job.moveToDelayed(Date.now() + DEFERRED_MS, token);
        throw new DelayedError();
      }
    }
    const evidence = job.stalledCounter > 0 ? await this.takeOver(runId) : undefined;
    if (evidence && evidence.charged > MAX_CHARGED_CRASHES) return this.failCrashing(job.data, evidence);
    if (evidence && (evidence.charged > 0 || evidence.shared >= SHARED_CRASHES_BEFORE_ALONE))
      return this.alone(runId, () => this.pass(job, token));
    while (this.isolating) await this.isolating;
    return this.pass(job, token);
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
    this.worker.concurrency = 1;
    try {
      while (this.executing.size > 0) await new Promise<void>((resolve) => (this.whenIdle = resolve));
      return await pass();
    } finally {
      this.ledger.forgive(runId);
      this.worker.concurrency = this.options.concurrency;
      this.isolating = undefined;
      isolated();
    }
  }

  /** A run that crashed its worker once too often while running alone fails; it is not taken up again. */
  private async failCrashing(job: RunJobData, evidence: CrashEvidence): Promise<never> {
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
      this.runs.ended(job);
    }
    throw new UnrecoverableError(error.message);
  }

  /** One pass of the run through the executor, in BullMQ's terms. */
  private async pass(job: Job<RunJobData>, token: string | undefined) {
    const { tenantId, runId } = job.data;
    this.executing.set(runId, job.data);
    this.ledger.hold(runId);
    let outcome: PassOutcome;
    let status = 'error';
    const started = performance.now();
    try {
      outcome = await this.executor.execute(
        job.data,
        this.shutdown.signal,
        (percent) => void job.updateProgress(percent).catch(() => {}),
      );
      status = outcome.kind === 'finished' ? outcome.status : outcome.kind;
    } finally {
      this.options.metrics.runAttempt(tenantId, status, (performance.now() - started) / 1000);
      this.executing.delete(runId);
      if (this.executing.size === 0) this.whenIdle?.();
      this.ledger.release(runId);
      this.endedSinceBeat++;
      this.runs.ended(job.data);
    }
    if (outcome.kind === 'wait') {
      // Not a failure: the job sleeps without spending a BullMQ attempt.
      await job.moveToDelayed(Date.now() + outcome.delayMs, token);
      throw new DelayedError();
    }
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
  private async onFailed(job: Job<RunJobData> | undefined, error: Error) {
    if (!job || error instanceof UnrecoverableError) return;
    try {
      // A failed attempt that will be retried leaves the job waiting or delayed; only a final failure leaves it failed.
      if ((await job.getState()) !== 'failed') return;
      const reason = {
        kind: 'retryable' as const,
        message: `gave up after ${job.attemptsMade} attempts: ${error.message}`,
      };
      await this.store.saveProgress(job.data.tenantId, job.data.runId, [], { status: 'failed', error: reason });
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
      const client = await ioredisOf(this.worker.client);
      await client
        .multi()
        .zrem(this.keys.heartbeats, this.id)
        .hdel(this.keys.slots, this.id, `${this.id}:c`)
        .exec()
        .catch(() => {});
      await this.worker.close();
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Store a batch of messages with their runs, then enqueue the runs; only then is any of them accepted. */
export async function acceptMessages(
  store: MessageStore,
  queue: RunQueue,
  batch: Array<{ message: NewMessage; runId: string }>,
): Promise<Array<AcceptedMessage | undefined>> {
  const results = await store.acceptMessages(batch);
  // New runs are queued unless held (they get a job when released). A duplicate whose run is still
  // queued never reached the queue (its first answer was a 503): it is enqueued now.
  const jobs: RunJobData[] = [];
  for (const result of results) if (result?.run.status === 'queued') jobs.push(runJob(result.run));
  await queue.enqueue(jobs);
  return results;
}
