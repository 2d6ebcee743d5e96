import { newId } from '../model/index.ts';
import { runJob, type RunQueue } from '../queue/index.ts';
import type { BatchStore, HeldFilter, MessageStore, Run } from '../store/index.ts';

/** Held runs settled per statement. */
export const BULK_PAGE = 500;

/** What becomes of held runs: run them (those whose hold no longer applies), discard them, or keep them held. */
export type HeldChoice = 'release' | 'discard' | 'keep';

/**
 * Runs started after the fact: a message replayed, failed runs or batch tasks tried again, held runs
 * released. Each is recorded in the store first and queued after, so no job exists without its run.
 */
export class RunService {
  constructor(
    private readonly store: MessageStore & BatchStore,
    private readonly queue: RunQueue,
  ) {}

  /** A new run of the message on its flow's active version. */
  async replay(tenantId: string, messageId: string, redoCompletedSteps = false): Promise<Run> {
    const run = await this.store.replayMessage(tenantId, messageId, newId(), redoCompletedSteps);
    await this.queue.enqueue([runJob(run)]);
    return run;
  }

  /** A new run for each message of the flow whose latest run failed, at most `limit`. */
  async retryFailedRuns(tenantId: string, flowId: string, limit: number): Promise<{ runs: Run[]; more: boolean }> {
    const retried = await this.store.retryFailedRuns(tenantId, flowId, newId, limit);
    await this.queue.enqueue(retried.runs.map(runJob));
    return retried;
  }

  /** A new run for each failed task of the batch, at most `limit`; `more` when failed tasks are left. */
  async retryFailedTasks(tenantId: string, batchId: string, limit: number): Promise<{ runs: Run[]; more: boolean }> {
    const retried = await this.store.retryFailedTasks(tenantId, batchId, newId, limit);
    await this.queue.enqueue(retried.runs.map(runJob));
    return retried;
  }

  /**
   * Settles held runs, BULK_PAGE at a time (each page its own statement, enqueued before the next:
   * a million held runs are never loaded or locked at once): released ones are queued in the store,
   * then enqueued in arrival order.
   */
  async settleHeld(tenantId: string, choice: HeldChoice, filter: HeldFilter, discardReason: string) {
    let released = 0;
    let discarded = 0;
    if (choice === 'release') {
      let after: string | undefined;
      do {
        const page = await this.store.releaseHeld(tenantId, filter, { after, limit: BULK_PAGE });
        await this.queue.enqueue(page.released.map(runJob));
        released += page.released.length;
        after = page.last;
      } while (after !== undefined);
    } else if (choice === 'discard') {
      let page: number;
      do {
        page = await this.store.discardHeld(tenantId, filter, discardReason, BULK_PAGE);
        discarded += page;
      } while (page === BULK_PAGE);
    }
    return { released, discarded };
  }
}
