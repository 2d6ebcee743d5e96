import { messageKeys } from '../flow/index.ts';
import { permanent, newId } from '../model/index.ts';
import { LOG_LINES_PER_RUN, type RunSink, type StartOptions, type Window } from '../nodes/index.ts';
import type {
  BatchStatus,
  BatchStore,
  DataSpaceStore,
  FlowStore,
  MessageStore,
  NewMessage,
  NewRunLog,
  Run,
  RunOutcome,
  RunStore,
  Step,
} from '../store/index.ts';
import { traceparentOf } from '../telemetry/index.ts';
import type { CompiledFlowCache } from './flow-cache.ts';

/** A run's effects, written to the store; a batch's new tasks are queued. */
export class StoreSink implements RunSink {
  readonly mode = 'run';

  constructor(
    private readonly store: RunStore & BatchStore & DataSpaceStore & FlowStore & MessageStore,
    private readonly flows: CompiledFlowCache,
    private readonly enqueue: (runs: Run[]) => Promise<void>,
  ) {}

  async save(run: Run, steps: Step[], outcome: RunOutcome | undefined, logs: NewRunLog[]) {
    await this.store.saveProgress(
      run.tenantId,
      run.id,
      steps,
      outcome,
      logs.length > 0 ? { flowId: run.flowId, lines: logs, perRunLimit: LOG_LINES_PER_RUN } : undefined,
    );
  }

  async createBatch(run: Run, nodeId: string, window: Window) {
    const created = await this.store.createBatch(run.tenantId, {
      id: newId(),
      flowId: run.flowId,
      flowVersion: run.flowVersion,
      runId: run.id,
      nodeId,
      windowFrom: window.from,
      windowTo: window.to,
    });
    return created.id;
  }

  async addBatchItems(run: Run, batchId: string, items: Array<{ key: string; item: unknown }>) {
    const runs = await this.store.addBatchTasks(
      run.tenantId,
      batchId,
      items.map((item) => ({ ...item, messageId: newId(), runId: newId() })),
    );
    await this.enqueue(runs);
    return runs.length;
  }

  async batchCounts(run: Run, batchId: string) {
    return (await this.store.getBatch(run.tenantId, batchId))!.counts;
  }

  setBatchStatus(run: Run, batchId: string, status: BatchStatus) {
    return this.store.setBatchStatus(run.tenantId, batchId, status);
  }

  setIncrementalField(run: Run, value: { field: string; value: string | null; overlapMs: number }) {
    return this.store.putIncrementalField(run.tenantId, run.flowId, value);
  }

  putDocument(run: Run, space: string, key: string, value: unknown) {
    return putDocument(this.store, run, space, key, value);
  }

  fanOutItem() {
    return undefined;
  }

  async startFlow(run: Run, flowKey: string, body: unknown, { deliveryId, called, trace }: StartOptions) {
    const flow = await this.store.findFlowByKey(run.tenantId, flowKey);
    if (!flow?.active || flow.activeVersion === null) return undefined;
    const message: NewMessage = {
      tenantId: run.tenantId,
      id: newId(),
      flowId: flow.id,
      flowVersion: flow.activeVersion,
      deliveryId,
      topic: null,
      body,
      headers: {},
      query: {},
      parent: called ? { runId: run.id, depth: run.callDepth + 1 } : undefined,
      traceparent: trace && traceparentOf(trace),
    };
    // Its keys hold as a delivered message's do: a called update of an order waits behind the order's other runs.
    Object.assign(
      message,
      await messageKeys((await this.flows.get(run.tenantId, flow.id, flow.activeVersion)).control, message),
    );
    // The delivery id makes it once: a pass that starts it again gets the first run back.
    const [accepted] = await this.store.acceptMessages([{ message, runId: newId() }]);
    // Deactivated or replaced since it was found.
    if (!accepted) return undefined;
    if (accepted.run.status === 'queued') await this.enqueue([accepted.run]);
    return accepted.run.id;
  }
}

/** A run's write of one document to a data space of its tenant. */
export async function putDocument(store: DataSpaceStore, run: Run, space: string, key: string, value: unknown) {
  const written = await store.putDocuments(run.tenantId, space, [{ key, value }]);
  if (!written) throw permanent(`there is no data space ${space}: create it first (PUT /api/v1/data-spaces/${space})`);
  return { created: written.created === 1 };
}
