import { newId } from './ids.ts';
import { runJob, type RunQueue } from './queue/run-queue.ts';
import type { BatchStore, HeldFilter, MessageStore, Run } from './store/port.ts';

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
  async replay(tenantId: string, messageId: string): Promise<Run> {
    const run = await this.store.replayMessage(tenantId, messageId, newId());
    await this.queue.enqueue([runJob(run)]);
    return run;
  }

  /** A new run for each message of the flow whose latest run failed, at most `limit`. */
  async retryFailedRuns(tenantId: string, flowId: string, limit: number): Promise<{ runs: Run[]; more: boolean }> {
    const retried = await this.store.retryFailedRuns(tenantId, flowId, newId, limit);
    await this.queue.enqueue(retried.runs.map(runJob));
    return retried;
  }

  /** A new run for each failed task of the batch. */
  async retryFailedTasks(tenantId: string, batchId: string): Promise<Run[]> {
    const runs = await this.store.retryFailedTasks(tenantId, batchId, newId);
    await this.queue.enqueue(runs.map(runJob));
    return runs;
  }

  /** Settles held runs: released ones are queued in the store, then enqueued in arrival order. */
  async settleHeld(tenantId: string, choice: HeldChoice, filter: HeldFilter, discardReason: string) {
    let released = 0;
    let discarded = 0;
    if (choice === 'release') {
      const runs = await this.store.releaseHeld(tenantId, filter);
      await this.queue.enqueue(runs.map(runJob));
      released = runs.length;
    } else if (choice === 'discard') {
      discarded = await this.store.discardHeld(tenantId, filter, discardReason);
    }
    return { released, discarded };
  }
}
