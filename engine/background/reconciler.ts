import { Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { ErrorRecord } from '../model/index.ts';
import type { EngineMetrics } from '../telemetry/index.ts';
import type { RunStore, UnfinishedRun, UnfinishedRunCursor } from '../store/index.ts';
import { enqueueRuns, runJob, type RunJobData, type RunQueue, MAX_TAKEOVERS } from '../queue/index.ts';
import { SingleFlight } from '../redis/index.ts';

/** Job states in which the job will still run (or is running): its run is in hand. */
const IN_HAND = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'paused']);
const PAGE = 200;

export interface ReconcilerOptions {
  /** A run younger than this is left alone: intake stores a run before it enqueues it. */
  graceMs: number;
  intervalMs: number;
  logger: Logger;
  metrics: EngineMetrics;
}

/** What a look at unfinished runs did. */
export interface Reconciled {
  looked: number;
  requeued: number;
  ended: number;
}

/**
 * Keeps the queue in step with the store, the source of truth, so that no unfinished run is
 * forgotten: a run whose job BullMQ failed without the run recording why (it kept killing its
 * workers, or its last worker died while failing it) ends `failed` with the reason; a run whose
 * job is nowhere (Redis lost it, a hand-off died half-way, a job removed by hand) is queued again,
 * in arrival order, and resumes from its checkpoints. Every worker process runs one; doing either
 * twice is harmless (a finished run keeps its outcome, a queued run is not queued twice).
 */
export class QueueReconciler {
  private cursor?: UnfinishedRunCursor;
  /**
   * Runs whose job was not in the queue at their last look. One is queued again only when its job
   * is still missing at the next look: a released or replayed run is marked queued just before its
   * job is added.
   */
  private readonly missing = new Set<string>();
  /** Runs looked at since the cursor last started over: a missing run not among them has ended. */
  private readonly seen = new Set<string>();
  private timer?: NodeJS.Timeout;
  private readonly rounds = new SingleFlight(
    () => this.sweepPage(),
    (error) => {
      this.options.logger.warn({ err: error }, 'could not reconcile runs with the queue');
      return { looked: 0, requeued: 0, ended: 0 };
    },
  );

  constructor(
    private readonly runs: RunQueue,
    private readonly store: RunStore,
    private readonly options: ReconcilerOptions,
  ) {}

  start() {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs).unref();
  }

  /** Stops the looks, after the one under way. */
  async close() {
    clearInterval(this.timer);
    await this.rounds.settled();
  }

  /** One look at a page of unfinished runs. */
  sweep(): Promise<Reconciled> {
    return this.rounds.run();
  }

  /**
   * After Redis lost its data: every unfinished run, oldest first, whose job is nowhere is queued
   * again at once (no grace, no second look: the queue is known to have lost them). `progress` is
   * told after each page.
   */
  async recover(progress: (done: Reconciled) => Promise<void>): Promise<Reconciled> {
    const total: Reconciled = { looked: 0, requeued: 0, ended: 0 };
    let cursor: UnfinishedRunCursor | undefined;
    const now = new Date().toISOString();
    do {
      const runs = await this.store.listUnfinishedRuns(now, cursor, PAGE);
      const done = await this.reconcile(runs, () => true);
      total.looked += done.looked;
      total.requeued += done.requeued;
      total.ended += done.ended;
      await progress(total);
      cursor = runs.length === PAGE ? runs[runs.length - 1] : undefined;
    } while (cursor);
    return total;
  }

  private async sweepPage(): Promise<Reconciled> {
    const before = new Date(Date.now() - this.options.graceMs).toISOString();
    const runs = await this.store.listUnfinishedRuns(before, this.cursor, PAGE);
    for (const run of runs) this.seen.add(run.id);
    const done = await this.reconcile(runs, (run) => {
      if (this.missing.delete(run.id)) return true;
      this.missing.add(run.id);
      return false;
    });
    // The next look goes on from here; after the last page it starts over.
    this.cursor = runs.length === PAGE ? runs[runs.length - 1] : undefined;
    if (!this.cursor) {
      for (const id of this.missing) if (!this.seen.has(id)) this.missing.delete(id);
      this.seen.clear();
    }
    return done;
  }

  /** Ends the runs whose job failed; queues again, in order, those whose job is nowhere and that `requeue` admits. */
  private async reconcile(runs: UnfinishedRun[], requeue: (run: UnfinishedRun) => boolean): Promise<Reconciled> {
    const found = await this.runs.locate(runs);
    const lost: UnfinishedRun[] = [];
    let ended = 0;
    for (const [index, run] of runs.entries()) {
      const where = found[index];
      if (where && (where.state === 'lane' || IN_HAND.has(where.state))) {
        this.missing.delete(run.id);
      } else if (where?.state === 'failed') {
        if (await this.fail(run, where.group.queue)) ended++;
      } else if (requeue(run)) {
        lost.push(run);
      }
    }
    if (lost.length > 0) {
      await enqueueRuns(this.store, this.runs, lost.map(runJob));
      this.options.logger.warn(
        { runs: lost.length, first: lost[0].id },
        'queued runs again: their jobs were in no queue (lost by Redis, or removed)',
      );
    }
    return { looked: runs.length, requeued: lost.length, ended };
  }

  private async fail(run: UnfinishedRun, queue: Queue<RunJobData>): Promise<boolean> {
    const job = await Job.fromId<RunJobData>(queue, run.id);
    const error = jobFailedError(job);
    if (!(await this.store.saveProgress(run.tenantId, run.id, [], { status: 'failed', error }))) return false;
    this.options.metrics.runAttempt(run.tenantId, 'failed', 0);
    this.options.logger.warn(
      { tenantId: run.tenantId, runId: run.id, reason: error.message },
      'run failed: its job failed in the queue',
    );
    return true;
  }
}

/** Why a run failed whose job BullMQ failed: its worker lost past the limit (its stall count says so), or its reason. */
function jobFailedError(job: Pick<Job, 'failedReason' | 'stalledCounter'> | undefined): ErrorRecord {
  if ((job?.stalledCounter ?? 0) > MAX_TAKEOVERS) {
    return {
      kind: 'permanent',
      message:
        `lost its worker ${MAX_TAKEOVERS + 1} times: each worker running it died or stopped answering ` +
        '(a crash, an out-of-memory kill, or its event loop blocked past WORKER_LOCK_MS); it is not tried again',
    };
  }
  return { kind: 'permanent', message: `its job failed in the queue: ${job?.failedReason ?? 'no reason given'}` };
}
