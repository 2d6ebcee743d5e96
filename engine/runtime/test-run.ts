import type { Logger } from 'pino';
import { HttpClient, type Transport } from '../outbound/index.ts';
import type { ActionRunner } from '../plugins/index.ts';
import { type ErrorRecord, newId } from '../model/index.ts';
import type { CompiledFlow } from '../flow/index.ts';
import { secretContext, type Keyring } from '../secrets/index.ts';
import type {
  BatchCounts,
  BatchStore,
  DataSpaceStore,
  DestinationStore,
  FlowStore,
  MessageStore,
  IncrementalField,
  NewRunLog,
  Run,
  RunOutcome,
  RunState,
  RunStore,
  Step,
  TerminalRunStatus,
} from '../store/index.ts';
import { RunPass } from './run-pass.ts';
import type { RunSink } from '../nodes/index.ts';
import { putDocument } from './store-sink.ts';

/** Items of a fan-out node a test run shows (it counts them all; the next nodes run with the first). */
const SHOWN_ITEMS = 20;

export interface TestRequest {
  input: { body?: unknown; headers?: Record<string, string>; query?: Record<string, unknown> };
  /** Side-effecting operations describe what they would send instead of sending it. */
  dryRun: boolean;
  /** Run only this node, with `steps` as the outputs of the nodes before it. */
  node?: string;
  steps?: Record<string, unknown>;
  /**
   * Where requests go instead of the network (a recorded run's answers: decision 29). Nothing is sent and nothing is
   * written: a data space write is answered, not made.
   */
  transport?: Transport;
}

export interface TestResult {
  /** `waiting`: a node failed in a way a run would retry (or asked to be tried later). */
  status: TerminalRunStatus | 'waiting';
  dryRun: boolean;
  error: ErrorRecord | null;
  steps: Step[];
  logs: NewRunLog[];
  /** What a fan-out node imported: the first items, and how many there were. */
  batch: { items: unknown[]; count: number } | null;
  /** Step keys of the nodes a dry run did not perform: their outputs are placeholders (`dryRun: true`). */
  simulated: string[];
  /** Nodes that ran on a placeholder: they read a simulated node's output, or such a node's. */
  readSimulated: string[];
}

/**
 * A test run's effects stay in memory: checkpoints and logs are collected for the answer, a
 * fan-out node's items are kept (the next nodes run with the first), the incremental field does not
 * move. Only a data space write of a test run that is neither a dry run nor a replay reaches the store.
 */
class TestSink implements RunSink {
  readonly mode: 'test' | 'dry-run' | 'replay';
  readonly steps: Step[] = [];
  readonly logs: NewRunLog[] = [];
  outcome?: RunOutcome;
  readonly items: unknown[] = [];
  readonly simulatedKeys: string[] = [];
  count = 0;
  private batched = false;

  constructor(
    dryRun: boolean,
    private readonly store: DataSpaceStore,
    replay: boolean,
  ) {
    this.mode = replay ? 'replay' : dryRun ? 'dry-run' : 'test';
  }

  async save(_run: Run, steps: Step[], outcome: RunOutcome | undefined, logs: NewRunLog[]) {
    this.steps.push(...steps);
    this.logs.push(...logs);
    if (outcome) this.outcome = outcome;
  }

  async createBatch() {
    this.batched = true;
    return newId();
  }

  async addBatchItems(_run: Run, _batchId: string, items: Array<{ key: string; item: unknown }>) {
    for (const { item } of items) if (this.items.length < SHOWN_ITEMS) this.items.push(item);
    this.count += items.length;
    return items.length;
  }

  async batchCounts(): Promise<BatchCounts> {
    return { total: this.count, unfinished: 0, succeeded: this.count, failed: 0, skipped: 0, progress: 100 };
  }

  async setBatchStatus() {}

  async setIncrementalField(
    run: Run,
    value: { field: string; value: string | null; overlapMs: number },
  ): Promise<IncrementalField> {
    return { flowId: run.flowId, ...value, movedAt: null, updatedAt: new Date().toISOString() };
  }

  async putDocument(run: Run, space: string, key: string, value: unknown) {
    // A replay writes nothing: the put is answered as the store would answer it.
    if (this.mode !== 'replay') return putDocument(this.store, run, space, key, value);
    return { created: (await this.store.getDocument(run.tenantId, space, key)) === undefined };
  }

  fanOutItem() {
    return this.items[0];
  }

  async startFlow() {
    return undefined;
  }

  simulated(key: string) {
    this.simulatedKeys.push(key);
  }

  get batch() {
    return this.batched ? { items: this.items, count: this.count } : null;
  }
}

export interface TestRunnerOptions {
  store: RunStore & BatchStore & DataSpaceStore & DestinationStore & FlowStore & MessageStore;
  actions: ActionRunner;
  keyring: Keyring;
  logger: Logger;
  http: HttpClient;
  maxOutputBytes: number;
  /** Whether a test run's steps show the requests their operations sent and the answers (RECORD_EXCHANGES). */
  recordExchanges: boolean;
}

/**
 * Runs a flow document (a draft) once, synchronously, with sample input: every node's output or
 * error comes back, nothing is recorded (no message, no run, no statistics). The same pass as a
 * real run, over a TestSink.
 */
export class TestRunner {
  constructor(private readonly options: TestRunnerOptions) {}

  async run(tenantId: string, flowId: string, flow: CompiledFlow, request: TestRequest): Promise<TestResult> {
    const { store, keyring } = this.options;
    const context = await store.readRunContext(tenantId, flow.references);
    const secrets = Object.fromEntries(
      context.sealedSecrets.map((sealed) => [sealed.name, keyring.open(sealed, secretContext(tenantId, sealed.name))]),
    );
    const now = new Date().toISOString();
    const messageId = newId();
    const run: Run = {
      tenantId,
      id: newId(),
      flowId,
      flowVersion: 0,
      concurrency: null,
      debounce: null,
      debouncedBy: null,
      budgetWaitMs: 0,
      messageId,
      status: 'running',
      heldBy: null,
      attempts: 1,
      error: null,
      createdAt: now,
      startedAt: now,
      finishedAt: null,
      batchId: null,
      parentRunId: null,
      callDepth: 0,
      replayOf: null,
    };
    const message = {
      tenantId,
      id: messageId,
      flowId,
      flowVersion: 0,
      deliveryId: null,
      topic: null,
      receivedAt: now,
      body: request.input.body ?? null,
      headers: request.input.headers ?? {},
      query: request.input.query ?? {},
    };
    // One node alone: every other node counts as done, with the outputs given for it.
    const steps: Step[] =
      request.node === undefined
        ? []
        : flow.graph.nodes
            .filter((node) => node.id !== request.node)
            .map((node) => ({
              runId: run.id,
              key: node.id,
              nodeId: node.id,
              status: 'succeeded',
              attempts: 1,
              output: request.steps?.[node.id] ?? null,
              error: null,
              startedAt: now,
              finishedAt: now,
            }));
    const state: RunState = { run, message, steps, ...context };
    const sink = new TestSink(request.dryRun, store, request.transport !== undefined);
    const http = request.transport ? new HttpClient({ transport: request.transport }) : this.options.http;
    const pass = new RunPass(
      { ...this.options, http, maxRetryDelayMs: 0 },
      sink,
      state,
      flow,
      secrets,
      new AbortController().signal,
      () => {},
    );
    const outcome = await pass.execute();
    return {
      status: outcome.kind === 'wait' ? 'waiting' : outcome.kind === 'finished' ? outcome.status : 'failed',
      dryRun: request.dryRun,
      error: sink.outcome?.error ?? null,
      steps: sink.steps,
      logs: sink.logs,
      batch: sink.batch,
      simulated: sink.simulatedKeys,
      readSimulated: readingPlaceholders(flow, sink),
    };
  }
}

/** The flow's nodes that ran reading a placeholder: a simulated node's output, or one computed from it. */
function readingPlaceholders(flow: CompiledFlow, sink: TestSink): string[] {
  const ran = new Set(sink.steps.map((step) => step.key));
  // A loop whose items' nodes were simulated outputs their placeholders.
  const tainted = new Set(sink.simulatedKeys.map((key) => (key.includes('[') ? key.slice(0, key.indexOf('[')) : key)));
  const reading: string[] = [];
  for (const node of flow.graph.nodes) {
    if (!ran.has(node.id) || tainted.has(node.id)) continue;
    if (![...node.reads].some((id) => tainted.has(id))) continue;
    tainted.add(node.id);
    reading.push(node.id);
  }
  return reading;
}
