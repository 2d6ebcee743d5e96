import type { Batch, BatchStatus, BatchTask, IncrementalField, Run, RunStatus } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** Fan-out batches and their tasks, and the incremental field a poll moves on. */
export interface BatchStore {
  /** A fan-out node's batch, with its task counts. */
  createBatch(tenantId: string, batch: NewBatch): Promise<Batch>;
  getBatch(tenantId: string, id: string): Promise<Batch | undefined>;
  listBatches(
    tenantId: string,
    filter: { flowId?: string; status?: BatchStatus },
    page: PageRequest,
  ): Promise<Page<Batch>>;
  /** Moves a batch on; `succeeded` and `failed` also stamp when it finished. */
  setBatchStatus(tenantId: string, id: string, status: BatchStatus): Promise<void>;
  /**
   * Adds the items the batch does not hold yet (by key), each as a task: a message (the item), a
   * run of the flow marked with the batch, and the fan-out node's checkpoint (the item), all in one
   * statement. Returns the new runs, to be enqueued.
   */
  addBatchTasks(tenantId: string, batchId: string, items: NewBatchTask[]): Promise<Run[]>;
  listBatchTasks(
    tenantId: string,
    batchId: string,
    filter: { status?: RunStatus },
    page: PageRequest,
  ): Promise<Page<BatchTask>>;
  /**
   * A new run for each failed task of the batch (the first `limit`), in place of the failed one
   * (which stays in the history); `more` when failed tasks are left.
   */
  retryFailedTasks(
    tenantId: string,
    batchId: string,
    newId: () => string,
    limit: number,
  ): Promise<{ runs: Run[]; more: boolean }>;
  getIncrementalField(tenantId: string, flowId: string): Promise<IncrementalField | undefined>;
  listIncrementalFields(tenantId: string, page: PageRequest): Promise<Page<IncrementalField>>;
  /** Sets the field; `movedAt` changes only when the value does. */
  putIncrementalField(
    tenantId: string,
    flowId: string,
    field: { field: string; value: string | null; overlapMs: number },
  ): Promise<IncrementalField>;
  deleteIncrementalField(tenantId: string, flowId: string): Promise<boolean>;
}

export interface NewBatch {
  id: string;
  flowId: string;
  flowVersion: number;
  runId: string;
  nodeId: string;
  windowFrom: string | null;
  windowTo: string | null;
}

export interface NewBatchTask {
  key: string;
  item: unknown;
  messageId: string;
  runId: string;
}
