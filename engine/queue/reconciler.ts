import { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ErrorRecord } from '../errors.ts';
import type { EngineMetrics } from '../metrics.ts';
import type { RunStore, UnfinishedRunCursor } from '../store/port.ts';
import { MAX_STALLED_COUNT, type RunJobData, type RunQueue } from './run-queue.ts';

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

/**
 * Ends the runs whose jobs left the queue without recording an outcome, so no run stays `running`
 * for ever: a job BullMQ failed because it kept killing its worker (it fails such jobs itself, and
 * no worker hears of it), a job whose last worker died while failing it, a job removed from the
 * queue (`clean`, an operator). Each such run ends `failed` with the reason, and can be replayed.
 * Every worker process runs one; ending a run twice is harmless (a finished run keeps its outcome).
 */
export class QueueReconciler {
  private cursor?: UnfinishedRunCursor;
  /**
   * Runs whose job was not in the queue at their last look. One is ended only when its job is still
   * missing at the next look: a released or replayed run is marked queued just before its job is added.
   */
  private readonly missing = new Set<string>();
  /** Runs looked at since the cursor last started over: a missing run not among them has ended. */
  private readonly seen = new Set<string>();
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<number>;

  constructor(
    private readonly runs: RunQueue,
    private readonly store: RunStore,
    private readonly options: ReconcilerOptions,
  ) {}

  start() {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs).unref();
  }

  async close() {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** One look at a page of unfinished runs; returns how many it ended. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepPage()
      .catch((error) => {
        this.options.logger.warn({ err: error }, 'could not reconcile runs with the queue');
        return 0;
      })
      .finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepPage(): Promise<number> {
    const before = new Date(Date.now() - this.options.graceMs).toISOString();
    const runs = await this.store.listUnfinishedRuns(before, this.cursor, PAGE);
    const inLanes = await this.runs.lanes.holds(runs.map((run) => run.id));
    const { queue } = this.runs;
    let ended = 0;
    for (const [index, run] of runs.entries()) {
      this.seen.add(run.id);
      const state = inLanes[index] ? 'waiting' : await queue.getJobState(run.id);
      if (IN_HAND.has(state)) {
        this.missing.delete(run.id);
        continue;
      }
      if (state !== 'failed' && !this.missing.delete(run.id)) {
        this.missing.add(run.id);
        continue;
      }
      const job = state === 'failed' ? await Job.fromId<RunJobData>(queue, run.id) : undefined;
      const error = jobLostError(job?.failedReason);
      if (!(await this.store.saveProgress(run.tenantId, run.id, [], { status: 'failed', error }))) continue;
      ended++;
      this.options.metrics.runAttempt(run.tenantId, 'failed', 0);
      this.options.logger.warn(
        { tenantId: run.tenantId, runId: run.id, jobState: state, reason: error.message },
        'run failed: its job left the queue',
      );
    }
    // The next look goes on from here; after the last page it starts over.
    this.cursor = runs.length === PAGE ? runs[runs.length - 1] : undefined;
    if (!this.cursor) {
      for (const id of this.missing) if (!this.seen.has(id)) this.missing.delete(id);
      this.seen.clear();
    }
    return ended;
  }
}

/** Why a run failed whose job BullMQ failed (or that is no longer in the queue at all). */
function jobLostError(failedReason: string | undefined): ErrorRecord {
  if (failedReason === undefined)
    return {
      kind: 'permanent',
      message: 'its job left the queue without an outcome (removed from the queue); replay the message to run it again',
    };
  if (/stalled more than allowable limit/.test(failedReason)) {
    return {
      kind: 'permanent',
      message:
        `crashed the worker ${MAX_STALLED_COUNT + 1} times: each worker running it died or stopped answering ` +
        '(a crash, an out-of-memory kill, or its event loop blocked past WORKER_LOCK_MS); it is not tried again',
    };
  }
  return { kind: 'permanent', message: `its job failed in the queue: ${failedReason}` };
}
