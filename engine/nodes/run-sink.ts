import type { SpanContext } from '../telemetry/index.ts';
import type { BatchCounts, BatchStatus, IncrementalField, NewRunLog, Run, RunOutcome, Step } from '../store/index.ts';

export type Window = { from: string | null; to: string | null };

export interface StartOptions {
  /** Makes the start happen once: a second start with it gets the first run back. */
  deliveryId: string;
  /** A call: the started run knows this one as its caller, one call deeper. */
  called?: boolean;
  /** The span that starts it (tracing on): the started run's spans continue its trace. */
  trace?: SpanContext;
}

/**
 * Where a run pass's effects on the platform go: for a run, the store (checkpoints, batches,
 * incremental fields, data spaces) and the queue; for a test run, memory (see TestSink).
 */
export interface RunSink {
  /**
   * `test`: nothing of the platform changes; `dry-run` also: side-effecting operations only describe what they
   * would send; `replay`: a recorded run given again (decision 29), operations acting as in a run while their
   * requests are answered from the recording, nothing of the platform changing.
   */
  readonly mode: 'run' | 'test' | 'dry-run' | 'replay';
  save(run: Run, steps: Step[], outcome: RunOutcome | undefined, logs: NewRunLog[]): Promise<void>;
  createBatch(run: Run, nodeId: string, window: Window): Promise<string>;
  /** Adds a fan-out node's items as tasks; returns how many were new. */
  addBatchItems(run: Run, batchId: string, items: Array<{ key: string; item: unknown }>): Promise<number>;
  batchCounts(run: Run, batchId: string): Promise<BatchCounts>;
  setBatchStatus(run: Run, batchId: string, status: BatchStatus): Promise<void>;
  setIncrementalField(
    run: Run,
    value: { field: string; value: string | null; overlapMs: number },
  ): Promise<IncrementalField>;
  putDocument(run: Run, space: string, key: string, value: unknown): Promise<{ created: boolean }>;
  /**
   * After a fan-out node: the item its following nodes run with in this pass, if any (a test run); none ends the
   * run.
   */
  fanOutItem(): unknown;
  /**
   * Starts a run of the tenant's flow `flowKey` (its active version) with `body`, once per `deliveryId`: the
   * run's id, or undefined when no active flow has that key (or a test run, which starts nothing).
   */
  startFlow(run: Run, flowKey: string, body: unknown, options: StartOptions): Promise<string | undefined>;
  /** A dry run: the node with this step key was simulated (it did not send), and its output is a placeholder. */
  simulated?(key: string): void;
}
