import type { Logger } from 'pino';
import type { HttpClient } from '../outbound/index.ts';
import {
  NotFoundError,
  OperationError,
  permanent,
  retryable,
  toErrorRecord,
  toOperationError,
  type ErrorRecord,
  JsonText,
  parseOnRead,
  storableJson,
} from '../model/index.ts';
import type { CompiledFlow, CompiledNode } from '../flow/index.ts';
import { TENANT, truthy, type Bindings } from '../expressions/index.ts';
import {
  StopSignal,
  type BatchHandle,
  type MessageInput,
  type OpenedDestination,
  type OperationContext,
  openDestination,
  type ActionRunner,
} from '../plugins/index.ts';
import { secretContext, type Keyring } from '../secrets/index.ts';
import {
  type BatchStore,
  type DataSpaceStore,
  type DestinationStore,
  isTerminal,
  type Run,
  type RunOutcome,
  type RunState,
  type RunStore,
  type Step,
  type TerminalRunStatus,
} from '../store/index.ts';
import type { CompiledFlowCache } from './flow-cache.ts';
import { SecretRedactor } from './redact.ts';
import { RunLogRecorder } from './run-log.ts';
import { StoreSink, type RunSink, type Window } from './run-sink.ts';

/** What the queue should do with the job after one pass of the executor. */
export type PassOutcome =
  | { kind: 'finished'; status: TerminalRunStatus; error?: ErrorRecord }
  /** A node waits: take the job up again after `delayMs` (a retry, or a "later"). */
  | { kind: 'wait'; delayMs: number; reason: string }
  /** The run does not exist (its tenant was deleted): nothing to do. */
  | { kind: 'gone' };

export interface ExecutorOptions {
  store: RunStore & BatchStore & DataSpaceStore & DestinationStore;
  /** Runs tenants' actions (`action:<name>` nodes). */
  actions: ActionRunner;
  flows: CompiledFlowCache;
  keyring: Keyring;
  logger: Logger;
  /** The operations' outbound HTTP (ctx.http), with this deployment's address policy. */
  http: HttpClient;
  /** Largest JSON a node may store as its output. */
  maxOutputBytes: number;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
  /** Queues runs this pass created (a fan-out node's tasks). */
  enqueue(runs: Run[]): Promise<void>;
}

const TRIGGER = 'trigger';
const LATER_DEFAULT_MS = 60_000;

/**
 * Runs one pass over a run: nodes in graph order, each completed node checkpointed, so a later pass
 * (a retry, or another worker after a crash) resumes after the last completed node and never
 * repeats one. Run status is derived from what is stored, and a finished run is never changed.
 */
export class Executor {
  constructor(private readonly options: ExecutorOptions) {}

  async execute(
    job: { tenantId: string; runId: string; flowId: string; flowVersion: number },
    shutdown: AbortSignal,
    progress: (percent: number) => void = () => {},
  ): Promise<PassOutcome> {
    const { store, keyring } = this.options;
    const { tenantId, runId } = job;
    let flow: CompiledFlow;
    try {
      // The compiled version is cached: knowing what the run reads, one statement fetches it all.
      flow = await this.options.flows.get(tenantId, job.flowId, job.flowVersion);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const record = toErrorRecord(permanent(error.message));
      await store.saveProgress(tenantId, runId, [], { status: 'failed', error: record });
      return { kind: 'finished', status: 'failed', error: record };
    }
    const state = await store.beginRun(tenantId, runId, flow.references);
    if (!state) return { kind: 'gone' };
    if (isTerminal(state.run.status))
      return { kind: 'finished', status: state.run.status, error: state.run.error ?? undefined };
    const secrets = Object.fromEntries(
      state.sealedSecrets.map((sealed) => [sealed.name, keyring.open(sealed, secretContext(tenantId, sealed.name))]),
    );
    return new RunPass(
      this.options,
      new StoreSink(store, this.options.enqueue),
      state,
      flow,
      secrets,
      shutdown,
      progress,
    ).run();
  }
}

/**
 * One pass over one run. Checkpoints of side-effecting nodes are written as soon as the node
 * returns; those of pure nodes (`sideEffects: false`) wait for the next write, since running a pure
 * node again after a crash changes nothing outside. One pass thus writes little more than once per
 * side effect.
 */
export class RunPass {
  private readonly checkpoints: Map<string, Step>;
  private readonly outputs: Record<string, unknown> = {};
  private readonly input: MessageInput;
  /** Every secret value this pass has opened: redacted from what it stores. */
  private readonly redactor: SecretRedactor;
  private readonly destinations = new Map<string, Promise<OpenedDestination>>();
  /** Outbound HTTP on sockets of this run's tenant only. */
  private readonly http: HttpClient;
  private readonly unsaved: Step[] = [];
  /** Made when an operation first logs: most passes log nothing. */
  private runLog?: RunLogRecorder;
  private logger?: Logger;

  constructor(
    private readonly options: Pick<
      ExecutorOptions,
      'store' | 'actions' | 'keyring' | 'logger' | 'http' | 'maxOutputBytes' | 'maxRetryDelayMs'
    >,
    private readonly sink: RunSink,
    private readonly state: RunState,
    private readonly flow: CompiledFlow,
    private readonly secrets: Record<string, string>,
    private readonly shutdown: AbortSignal,
    private readonly progress: (percent: number) => void,
  ) {
    this.checkpoints = new Map(state.steps.map((step) => [step.key, step]));
    const { message } = state;
    this.input = {
      messageId: message.id,
      receivedAt: message.receivedAt,
      body: message.body,
      headers: message.headers,
      query: message.query,
    };
    if (message.body instanceof JsonText) parseOnRead(this.input, 'body', message.body);
    this.redactor = new SecretRedactor(Object.values(secrets));
    this.http = options.http.forTenant(state.run.tenantId);
  }

  async run(): Promise<PassOutcome> {
    const { vars, platform } = this.state;
    const bindings: Bindings = {
      input: this.input,
      steps: this.outputs,
      vars,
      secrets: this.secrets,
      platform,
      lookup: this.lookup,
      [TENANT]: this.state.run.tenantId,
    };
    const done = new Set<string>([TRIGGER]);
    const last = this.flow.nodes[this.flow.nodes.length - 1];
    for (const node of this.flow.nodes) {
      let activated: boolean;
      try {
        activated = await this.activated(node, done, bindings);
      } catch (thrown) {
        // An edge condition that cannot be evaluated is a fault of the flow: retrying evaluates it the same way.
        const error = this.redactError(toOperationError(thrown));
        return this.end({ status: 'failed', error: { ...toErrorRecord(error), kind: 'permanent', node: node.id } });
      }
      if (!activated) continue;
      const checkpoint = this.checkpoints.get(node.id);
      if (checkpoint?.status !== 'succeeded') {
        const outcome = await this.runNode(node, bindings, checkpoint);
        if (outcome) return outcome;
      } else {
        this.outputs[node.id] = checkpoint.output;
      }
      done.add(node.id);
      // The nodes after a fan-out node run in its batch's tasks, not in the run that imported the batch
      // (a test run goes on with one of the items).
      if (node.operation.definition.fanOut && !this.state.run.batchId) {
        const item = this.sink.fanOutItem();
        if (item === undefined) return this.end({ status: 'succeeded', error: null });
        // As in a task: the item is the fan-out node's output and the message's body.
        this.outputs[node.id] = item;
        this.input.body = item;
      }
      if (checkpoint?.status === 'succeeded') continue;
      // A side effect is recorded before anything else happens; after the last node, the run's end records it.
      if (node.operation.definition.sideEffects && node !== last) await this.save();
    }
    return this.end({ status: 'succeeded', error: null });
  }

  /** `$lookup(space, key)`: a document's value from a data space (undefined when absent), read once per pass. */
  private lookups?: Map<string, Promise<unknown>>;
  private readonly lookup = (space: unknown, key: unknown): Promise<unknown> | undefined => {
    if (typeof space !== 'string' || (typeof key !== 'string' && typeof key !== 'number')) return undefined;
    const id = `${space}\0${key}`;
    this.lookups ??= new Map();
    let found = this.lookups.get(id);
    if (!found) {
      found = this.options.store
        .getDocument(this.state.run.tenantId, space, String(key))
        .then((document) => document?.value);
      this.lookups.set(id, found);
    }
    return found;
  };

  private async activated(node: CompiledNode, done: Set<string>, bindings: Bindings) {
    for (const edge of node.incoming) {
      if (!done.has(edge.from)) continue;
      if (!edge.when || truthy(await edge.when.evaluate(bindings))) return true;
    }
    return false;
  }

  /** Runs one node; returns an outcome when the pass must end here. */
  private async runNode(
    node: CompiledNode,
    bindings: Bindings,
    checkpoint: Step | undefined,
  ): Promise<PassOutcome | undefined> {
    const startedAt = new Date().toISOString();
    const failuresSoFar = checkpoint?.status === 'waiting' ? checkpoint.attempts : 0;
    const attempt = failuresSoFar + 1;
    const step = (status: Step['status'], attempts: number, output: unknown, error: ErrorRecord | null): Step => ({
      runId: this.state.run.id,
      key: node.id,
      nodeId: node.id,
      status,
      attempts,
      output,
      error,
      startedAt,
      finishedAt: new Date().toISOString(),
    });

    let result: unknown;
    try {
      result = await this.invoke(node, bindings, attempt);
    } catch (thrown) {
      const error = this.redactError(toOperationError(thrown));
      const record: ErrorRecord = { ...toErrorRecord(error), node: node.id };
      if (error.kind === 'later') {
        this.unsaved.push(step('waiting', failuresSoFar, null, record));
        return this.wait(record, error.retryAfterMs ?? LATER_DEFAULT_MS, error.message);
      }
      if (error.kind === 'retryable' && attempt < node.retry.maxAttempts) {
        this.unsaved.push(step('waiting', attempt, null, record));
        return this.wait(
          record,
          Math.max(error.retryAfterMs ?? 0, backoff(node.retry.backoffMs, attempt)),
          error.message,
        );
      }
      const final =
        error.kind === 'retryable'
          ? { ...record, message: `gave up after ${attempt} attempts: ${record.message}` }
          : record;
      this.unsaved.push(step('failed', attempt, null, final));
      this.log().warn({ nodeId: node.id, error: final }, 'run failed');
      return this.end({ status: 'failed', error: final });
    }

    if (result instanceof StopSignal) {
      this.unsaved.push(step(result.status, attempt, { reason: result.reason }, null));
      return this.end({ status: result.status, error: null });
    }
    // An output that cannot be stored fails the same way on every try: the node fails at once.
    let stored: { text: string; value: unknown };
    try {
      stored = storableJson(this.redactor.redact(result ?? null));
    } catch (thrown) {
      return this.failNode(step, attempt, node, `output cannot be stored: ${toOperationError(thrown).message}`);
    }
    const { text, value: output } = stored;
    const size = Buffer.byteLength(text);
    if (size > this.options.maxOutputBytes)
      return this.failNode(
        step,
        attempt,
        node,
        `output of ${size} bytes exceeds the limit of ${this.options.maxOutputBytes}`,
      );
    this.unsaved.push(step('succeeded', attempt, output, null));
    this.outputs[node.id] = output;
    return undefined;
  }

  private failNode(
    step: (status: Step['status'], attempts: number, output: unknown, error: ErrorRecord | null) => Step,
    attempt: number,
    node: CompiledNode,
    message: string,
  ) {
    const record: ErrorRecord = { kind: 'permanent', message, node: node.id };
    this.unsaved.push(step('failed', attempt, null, record));
    return this.end({ status: 'failed', error: record });
  }

  private async invoke(node: CompiledNode, bindings: Bindings, attempt: number): Promise<unknown> {
    const config = node.operation.config.validate(await node.config.evaluate(bindings), `$.nodes.${node.id}.config`);
    // The abort signal is made only for operations that ask for it (an AbortController is not free).
    let controller: AbortController | undefined;
    const abortOnShutdown = () => controller?.abort(this.shutdown.reason);
    const signal = () => {
      if (!controller) {
        controller = new AbortController();
        if (this.shutdown.aborted) controller.abort(this.shutdown.reason);
        else this.shutdown.addEventListener('abort', abortOnShutdown, { once: true });
      }
      return controller.signal;
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = retryable(`node timed out after ${node.timeoutMs} ms`);
        controller?.abort(error);
        reject(error);
      }, node.timeoutMs);
    });
    try {
      const { definition } = node.operation;
      const ctx = this.context(node, config, attempt, signal);
      // A dry run sends nothing: a side-effecting operation describes what it would send, if it can.
      const work =
        this.sink.mode === 'dry-run' && definition.sideEffects
          ? definition.preview
            ? definition.preview(ctx).then((wouldSend) => ({ dryRun: true, wouldSend }))
            : Promise.resolve({ dryRun: true, notRun: `${definition.name} has side effects and cannot describe them` })
          : definition.run(ctx);
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
      if (controller) this.shutdown.removeEventListener('abort', abortOnShutdown);
    }
  }

  private context(
    node: CompiledNode,
    config: unknown,
    attempt: number,
    signal: () => AbortSignal,
  ): OperationContext<unknown> {
    const { run } = this.state;
    const pass = this;
    let logger: Logger | undefined;
    const stepNames = new Set<string>();
    return {
      config,
      input: this.input,
      steps: this.outputs,
      // Created on first use: most operations never log.
      get logger() {
        return (logger ??= (pass.runLog ??= new RunLogRecorder(pass.redactor)).wrap(
          pass.options.logger,
          () => pass.log().child({ nodeId: node.id }),
          node.id,
        ));
      },
      get signal() {
        return signal();
      },
      idempotencyKey: `${run.id}.${node.id}`,
      http: this.http,
      tenantId: run.tenantId,
      flowId: run.flowId,
      runId: run.id,
      nodeId: node.id,
      attempt,
      step: (name, fn) => {
        const refused = stepNameRefusal(name, stepNames);
        if (refused) return Promise.reject(permanent(`ctx.step("${name}") in node ${node.id}: ${refused}`));
        stepNames.add(name);
        return this.subStep(node, name, fn);
      },
      destination: (name) => this.destination(name),
      batch: (window) => this.batch(node, window),
      action: (name, input, version) =>
        this.options.actions.run(run.tenantId, name, version, input, `$.nodes.${node.id}.config`),
      dataSpaces: {
        get: (space, key) =>
          this.options.store.getDocument(run.tenantId, space, key).then((document) => document?.value),
        put: (space, key, value) => this.sink.putDocument(run, space, key, value),
      },
      incrementalField: {
        get: () => this.options.store.getIncrementalField(run.tenantId, run.flowId),
        set: (value) => this.sink.setIncrementalField(run, value),
      },
      testRun: this.sink.mode !== 'run',
      progress: this.progress,
      stop: (status, reason) => new StopSignal(status, reason),
    };
  }

  private async batch(node: CompiledNode, window: Window): Promise<BatchHandle> {
    const { sink } = this;
    const { run } = this.state;
    const { id } = await this.subStep(node, 'batch', async () => ({
      id: await sink.createBatch(run, node.id, window),
    }));
    return {
      id,
      add: (items) => sink.addBatchItems(run, id, items),
      counts: () => sink.batchCounts(run, id),
      setStatus: (status) => sink.setBatchStatus(run, id, status),
    };
  }

  private destination(name: string): Promise<OpenedDestination> {
    let opened = this.destinations.get(name);
    if (!opened) {
      opened = this.openDestination(name);
      this.destinations.set(name, opened);
      opened.catch(() => this.destinations.delete(name));
    }
    return opened;
  }

  private async openDestination(name: string): Promise<OpenedDestination> {
    const opened = await openDestination(this.options.store, this.options.keyring, this.state.run.tenantId, name);
    if (!opened) throw permanent(`destination "${name}" does not exist`);
    collectStrings(opened.credentials, this.redactor);
    return opened;
  }

  private async subStep<T>(node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T> {
    const key = `${node.id}/${name}`;
    const done = this.checkpoints.get(key);
    if (done?.status === 'succeeded') return done.output as T;
    const startedAt = new Date().toISOString();
    const value = await fn();
    const record: Step = {
      runId: this.state.run.id,
      key,
      nodeId: node.id,
      status: 'succeeded',
      attempts: 1,
      output: storableJson(this.redactor.redact(value ?? null)).value,
      error: null,
      startedAt,
      finishedAt: new Date().toISOString(),
    };
    this.unsaved.push(record);
    await this.save();
    this.checkpoints.set(key, record);
    return value;
  }

  private async save(outcome?: RunOutcome) {
    await this.sink.save(this.state.run, this.unsaved.splice(0), outcome, this.runLog?.take() ?? []);
  }

  private async wait(error: ErrorRecord, delayMs: number, reason: string): Promise<PassOutcome> {
    await this.save({ status: 'waiting', error });
    return { kind: 'wait', delayMs: Math.min(Math.max(0, delayMs), this.options.maxRetryDelayMs), reason };
  }

  private async end(outcome: RunOutcome & { status: TerminalRunStatus }): Promise<PassOutcome> {
    await this.save(outcome);
    return outcome.error
      ? { kind: 'finished', status: outcome.status, error: outcome.error }
      : { kind: 'finished', status: outcome.status };
  }

  private redactError(error: OperationError): OperationError {
    const message = this.redactor.redact(error.message);
    const details = this.redactor.redact(error.details);
    if (message === error.message && details === error.details) return error;
    return new OperationError(error.kind, message, { retryAfterMs: error.retryAfterMs, details });
  }

  private log(): Logger {
    const { run } = this.state;
    return (this.logger ??= this.options.logger.child({ tenantId: run.tenantId, flowId: run.flowId, runId: run.id }));
  }
}

/** Sub-step names the engine itself uses within a node (`ctx.batch`). */
const RESERVED_STEP_NAMES = new Set(['batch']);

/**
 * Why a step name cannot be used, if it cannot. A name used twice in one attempt would silently hand
 * the second call the first one's result, so it is refused: a loop gives each call its own name.
 */
function stepNameRefusal(name: string, used: Set<string>): string | undefined {
  if (name.length === 0 || name.length > 200) return 'a step name is 1-200 characters';
  if (RESERVED_STEP_NAMES.has(name)) return `"${name}" is reserved by the engine`;
  if (used.has(name)) return 'the name is used twice in one attempt: give each call its own (with an index in a loop)';
  return undefined;
}

function collectStrings(value: unknown, into: SecretRedactor) {
  if (typeof value === 'string') {
    into.add(value);
  } else if (value && typeof value === 'object') {
    for (const item of Object.values(value)) collectStrings(item, into);
  }
}

/** Exponential backoff with "equal jitter": half fixed, half random, so retries of many runs spread out. */
function backoff(baseMs: number, attempt: number) {
  const exponential = baseMs * 2 ** (attempt - 1);
  return exponential / 2 + Math.random() * (exponential / 2);
}
