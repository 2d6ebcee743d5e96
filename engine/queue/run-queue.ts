import { setMaxListeners } from 'node:events';
import { DelayedError, Queue, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { EngineMetrics } from '../metrics.ts';
import type { Executor, PassOutcome } from '../runtime/executor.ts';
import type { Run, RunStore } from '../store/port.ts';
import { HEARTBEAT_INTERVAL_MS, HEARTBEAT_TTL_MS, heartbeatKey, ioredisOf } from './health.ts';
import { newId } from '../ids.ts';
import { TenantSlots } from './tenant-slots.ts';

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
}

export const runJob = (run: Pick<Run, 'tenantId' | 'id' | 'flowId' | 'flowVersion'>): RunJobData => ({
  tenantId: run.tenantId,
  runId: run.id,
  flowId: run.flowId,
  flowVersion: run.flowVersion,
});

export interface QueueOptions {
  connection: ConnectionOptions;
  /** Redis key prefix: one per deployment (or per test file). */
  prefix: string;
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
 * A job whose worker died is taken over (its completed nodes are not run again) this many times; the
 * next loss fails it (and the queue reconciler ends its run): a job that keeps killing its workers.
 */
export const MAX_STALLED_COUNT = 3;

/** How long a run waits when its tenant is at its concurrency limit (with jitter). */
const TENANT_BUSY_DELAY_MS = 500;

export class RunQueue {
  readonly queue: Queue<RunJobData>;

  constructor(options: QueueOptions) {
    this.queue = new Queue<RunJobData>(RUN_QUEUE, {
      connection: options.connection,
      prefix: options.prefix,
      defaultJobOptions: {
        attempts: JOB_ATTEMPTS,
        backoff: { type: 'exponential', delay: 2000 },
        removeOnComplete: { age: 24 * 3600, count: 10_000 },
        removeOnFail: { age: 14 * 24 * 3600 },
      },
    });
    // Errors surface on the calls that fail; an unhandled 'error' event would end the process.
    this.queue.on('error', () => {});
  }

  /** The job id is the run id: adding a run that is already queued is a no-op. One round trip for all. */
  async enqueue(jobs: RunJobData[]): Promise<void> {
    if (jobs.length === 0) return;
    await withinEnqueueTimeout(
      this.queue.addBulk(jobs.map((data) => ({ name: 'run', data, opts: { jobId: data.runId } }))),
      'take the jobs',
    );
  }

  close() {
    return this.queue.close();
  }
}

export interface WorkerOptions extends QueueOptions {
  concurrency: number;
  /** Most runs of one tenant executing at once across all workers; 0 for no limit. */
  tenantConcurrency: number;
  /** How long a job's lock lasts without renewal; a killed worker's job is taken over after it. */
  lockDurationMs: number;
  /** How often workers look for jobs whose lock expired. */
  stalledIntervalMs: number;
  logger: Logger;
  metrics: EngineMetrics;
}

/** Takes run jobs and hands them to the executor; translates its outcome into BullMQ terms. */
export class RunWorker {
  readonly worker: Worker<RunJobData>;
  private readonly shutdown = new AbortController();
  private readonly id = newId();
  private heartbeat?: NodeJS.Timeout;
  private readonly slots?: TenantSlots;

  constructor(
    private readonly executor: Executor,
    private readonly store: RunStore,
    private readonly options: WorkerOptions,
  ) {
    this.worker = new Worker<RunJobData>(RUN_QUEUE, (job, token) => this.process(job, token), {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
      maxStalledCount: MAX_STALLED_COUNT,
      autorun: false,
    });
    if (options.tenantConcurrency > 0) {
      this.slots = new TenantSlots(() => ioredisOf(this.worker.client), {
        prefix: options.prefix,
        limit: options.tenantConcurrency,
        leaseMs: Math.max(options.lockDurationMs, HEARTBEAT_TTL_MS),
      });
    }
    // Every node in flight that asked for an abort signal listens to the shutdown: as many as the concurrency.
    setMaxListeners(options.concurrency + 10, this.shutdown.signal);
    this.worker.on('failed', (job, error) => void this.onFailed(job, error));
    this.worker.on('error', (error) => options.logger.error({ err: error }, 'worker error'));
  }

  async start() {
    void this.worker.run();
    await this.worker.waitUntilReady();
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS).unref();
  }

  /**
   * Readiness counts workers whose heartbeat is fresh; a closed or stopped worker stops beating. A
   * worker that beats but no longer receives jobs (a half-open blocking connection) shows up in
   * readiness as the age of the oldest waiting run instead.
   */
  private async beat() {
    if (!this.worker.isRunning() || this.worker.closing) return;
    try {
      const client = await ioredisOf(this.worker.client);
      const key = heartbeatKey({ opts: { prefix: this.options.prefix }, name: RUN_QUEUE });
      const now = Date.now();
      await client
        .multi()
        .zadd(key, now, this.id)
        .zremrangebyscore(key, '-inf', now - HEARTBEAT_TTL_MS * 4)
        .exec();
      await this.slots?.renew();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'worker heartbeat failed');
    }
  }

  private async process(job: Job<RunJobData>, token: string | undefined) {
    const { tenantId, runId } = job.data;
    if (this.slots && !(await this.slots.acquire(tenantId, runId))) {
      // The tenant has its share running: come back shortly, behind other tenants' runs, no attempt spent.
      await job.moveToDelayed(Date.now() + TENANT_BUSY_DELAY_MS / 2 + Math.random() * TENANT_BUSY_DELAY_MS, token);
      throw new DelayedError();
    }
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
      await this.slots?.release(tenantId, runId);
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
    const timer = setTimeout(() => this.shutdown.abort(new Error('worker shutting down')), graceMs);
    try {
      const client = await ioredisOf(this.worker.client);
      await client
        .zrem(heartbeatKey({ opts: { prefix: this.options.prefix }, name: RUN_QUEUE }), this.id)
        .catch(() => {});
      await this.worker.close();
    } finally {
      clearTimeout(timer);
    }
  }
}
