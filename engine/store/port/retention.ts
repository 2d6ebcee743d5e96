/** How long messages, runs and steps are kept, and the sweep that drops what is past it. */
export interface RetentionStore {
  /** The deployment's days (a tenant's `retentionDays` and `failedRetentionDays` limits override them). */
  setRetentionPolicy(policy: RetentionPolicy): Promise<void>;
  /** Makes room for the rows of every week in [fromMs, toMs], for each retention in use. */
  preparePartitions(fromMs: number, toMs: number): Promise<void>;
  /** Drops what is past its retention as of `nowMs` and keeps what must outlive it; what it did. */
  pruneExpired(nowMs: number): Promise<PruneReport>;
}

export interface RetentionPolicy {
  /** Days a tenant's messages, runs and steps are kept unless its limits say otherwise. */
  days: number;
  /** Days failed and handled runs (and their messages and steps) are kept: at least `days`. */
  failedDays: number;
  /** The most days any tenant may keep them. */
  maxDays: number;
}

export interface PruneReport {
  /** Week partitions (of messages, runs and steps, one retention each) dropped whole. */
  partitionsDropped: number;
  /** Rows moved out of a dropped partition: runs not finished, failed ones kept longer, messages replayed later. */
  rowsKept: number;
  /** Rows deleted one by one: those written before partitioning, and those kept past their partition. */
  rowsDeleted: number;
}
