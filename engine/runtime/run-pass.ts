import type { Logger } from 'pino';
import type { BudgetWaits, HttpClient } from '../outbound/index.ts';
import {
  type Exchange,
  OperationError,
  toErrorRecord,
  toOperationError,
  type ErrorRecord,
  JsonText,
  parseOnRead,
  storableJson,
} from '../model/index.ts';
import { type CompiledFlow, keysOf } from '../flow/index.ts';
import { TENANT, type Bindings } from '../expressions/index.ts';
import { StopSignal, type MessageInput } from '../plugins/index.ts';
import { SecretRedactor } from '../secrets/index.ts';
import type { Run, RunOutcome, RunState, Step, TerminalRunStatus } from '../store/index.ts';
import {
  type CompiledGraph,
  type CompiledNode,
  type GraphOutcome,
  type GraphScope,
  type HandledFailures,
  anyHolds,
  isActivated,
  type NodeCall,
  type NodeHost,
  type NodeKind,
  type NodeRunner,
  RunLogRecorder,
  type RunSink,
} from '../nodes/index.ts';
import { logFieldsOf, type SpanContext, type Tracer } from '../telemetry/index.ts';
import { documentReader, type DocumentReader } from './document-reader.ts';
import { NodeSpan } from './node-span.ts';
import { backoff, type PassOutcome, withHandled } from './pass-outcome.ts';

export type RunPassOptions = NodeHost['options'] & {
  /** Spans of node attempts, in the run's trace (`trace`); none when the pass is not traced. */
  tracer?: Tracer;
  /** The operations' outbound HTTP, with this deployment's address policy (each pass takes its tenant's). */
  http: HttpClient;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
};

const LATER_DEFAULT_MS = 60_000;
/** The delivery id of a failure flow's message: `failure:<failed run id>`. */
const FAILURE_DELIVERY = 'failure:';

/**
 * One pass over one run. Checkpoints of side-effecting nodes are written as soon as the node
 * returns; those of pure nodes (`sideEffects: false`) wait for the next write, since running a pure
 * node again after a crash changes nothing outside. One pass thus writes little more than once per
 * side effect.
 */
export class RunPass implements NodeHost {
  private readonly checkpoints: Map<string, Step>;
  readonly outputs: Record<string, unknown> = {};
  readonly input: MessageInput;
  readonly redactor: SecretRedactor;
  readonly http: HttpClient;
  /** What the run's requests waited for their turns on outbound budgets, its earlier passes included. */
  private readonly budgetWaits: BudgetWaits;
  private readonly unsaved: Step[] = [];
  /** What each kind of node does, made for this pass when first needed; this class does the rest. */
  private readonly runners = new Map<NodeKind, NodeRunner<unknown>>();
  private logger?: Logger;
  private recorder?: RunLogRecorder;

  constructor(
    readonly options: RunPassOptions,
    readonly sink: RunSink,
    private readonly state: RunState,
    private readonly flow: CompiledFlow,
    private readonly secrets: Record<string, string>,
    readonly shutdown: AbortSignal,
    readonly progress: (percent: number) => void,
    /** The span of this attempt at the run, when tracing is on: its nodes' spans are its children. */
    private readonly trace?: SpanContext,
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
    // A test run's requests go at once: it holds no place in a budget's line (nothing would wake it).
    const { tenantId, id, budgetWaitMs, error } = state.run;
    this.budgetWaits = { ms: budgetWaitMs + waitedAway(error) };
    this.http =
      sink.mode === 'run' ? options.http.forRun(tenantId, id, this.budgetWaits) : options.http.forTenant(tenantId);
  }

  get run(): Run {
    return this.state.run;
  }

  async execute(): Promise<PassOutcome> {
    const keyFault = await this.keyFault();
    if (keyFault) return this.end({ status: 'failed', error: keyFault });
    const { vars, platform } = this.state;
    const bindings: Bindings = {
      input: this.input,
      steps: this.outputs,
      vars,
      secrets: this.secrets,
      platform,
      document: this.document,
      [TENANT]: this.state.run.tenantId,
    };
    const outcome = await this.runGraph(this.flow.graph, {
      prefix: '',
      outputs: this.outputs,
      bindings,
      trace: this.trace,
    });
    switch (outcome.kind) {
      case 'done':
        return outcome.handled
          ? this.end({ status: 'handled', error: { ...outcome.handled.first, failures: outcome.handled.count } })
          : this.end({ status: 'succeeded', error: null });
      case 'stopped':
        return this.end({ status: outcome.status, error: null });
      case 'failed':
        this.log().warn({ nodeId: outcome.error.node, error: outcome.error }, 'run failed');
        // Started before the failure is recorded: a crash in between starts it again, once (its delivery id).
        await this.startFailureFlow(outcome.error);
        return this.end({ status: 'failed', error: outcome.error });
      case 'wait':
        // Waiting away for a turn on a budget: it waited in place first.
        this.budgetWaits.ms += budgetWait(outcome.error)?.waitedMs ?? 0;
        await this.save({ status: 'waiting', error: outcome.error });
        return { kind: 'wait', delayMs: outcome.delayMs, reason: outcome.error.message };
    }
  }

  /**
   * Why the run's message gives no key, when its flow has keys and the run came without: keys are evaluated as a
   * message arrives, and that says nothing more. A replay keeps its run's concurrency key, or none.
   */
  private async keyFault(): Promise<ErrorRecord | undefined> {
    const { concurrency, debounce } = this.flow.control;
    const { run } = this;
    if (run.replayOf || ((!concurrency || run.concurrency) && (!debounce || run.debounce))) return undefined;
    return (await keysOf(this.flow.control, this.input)).fault;
  }

  async runGraph(graph: CompiledGraph, scope: GraphScope): Promise<GraphOutcome> {
    const done = new Set<string>([graph.entry]);
    /** Nodes that failed for good and whose error path took the failure: it runs, with the failure as `$failure`. */
    const failed = new Set<string>();
    let handled: HandledFailures | undefined;
    const last = graph.nodes[graph.nodes.length - 1];
    // After the flow's last node, the run's end records its checkpoint; a loop item's last node has its own.
    const endsRun = scope.prefix === '';
    let output: unknown;
    for (const node of graph.nodes) {
      let activated: boolean;
      try {
        activated = await isActivated(node, done, failed, scope.bindings);
      } catch (thrown) {
        return this.conditionFailed(node, thrown);
      }
      if (!activated) continue;
      const key = scope.prefix + node.id;
      const checkpoint = this.checkpoints.get(key);
      // A node that failed for good in an earlier pass (a loop's item, or one an error path took) is not run again.
      const outcome =
        checkpoint?.status === 'succeeded'
          ? undefined
          : checkpoint?.status === 'failed'
            ? ({ kind: 'failed', error: checkpoint.error!, attempts: checkpoint.attempts } as const)
            : await this.runNode(node, scope, key, checkpoint);
      if (outcome?.kind === 'failed') {
        const failure = {
          kind: outcome.error.kind,
          message: outcome.error.message,
          nodeId: node.id,
          attempts: outcome.attempts ?? 1,
        };
        let taken: boolean;
        try {
          taken = await anyHolds(graph.errorPaths.get(node.id) ?? [], { ...scope.bindings, failure });
        } catch (thrown) {
          return this.conditionFailed(node, thrown);
        }
        // A failure no error path takes ends the walk: the run (or the loop's item) failed.
        if (!taken) return outcome;
        failed.add(node.id);
        handled = withHandled(handled, { first: outcome.error, count: 1 });
        scope.bindings.failure = failure;
        // As after a success: a side-effecting node's failure is recorded before its error path acts, so a
        // crash in between does not try the node again.
        if (checkpoint?.status !== 'failed' && node.kind.hasSideEffects(node.spec)) await this.save();
        continue;
      }
      if (outcome) return outcome;
      if (checkpoint?.status === 'succeeded') scope.outputs[node.id] = checkpoint.output;
      done.add(node.id);
      output = scope.outputs[node.id];
      handled = withHandled(handled, node.kind.handledIn?.(output));
      if (this.runner(node).after?.(node) === 'end') return { kind: 'done', last: output, handled };
      if (checkpoint?.status === 'succeeded') continue;
      // A side effect is recorded before anything else happens.
      if (node.kind.hasSideEffects(node.spec) && !(endsRun && node === last)) await this.save();
    }
    return { kind: 'done', last: output, handled };
  }

  /** An edge condition that cannot be evaluated is a fault of the flow: retrying evaluates it the same way. */
  private conditionFailed(node: CompiledNode, thrown: unknown): GraphOutcome {
    const error = this.redactError(toOperationError(thrown));
    return { kind: 'failed', error: { ...toErrorRecord(error), kind: 'permanent', node: node.id } };
  }

  /** The flow's failure flow, with this run's context; a failure flow's own failures start nothing. */
  private async startFailureFlow(error: ErrorRecord) {
    const { failureFlow } = this.flow;
    const { run, message } = this.state;
    if (!failureFlow || message.deliveryId?.startsWith(FAILURE_DELIVERY)) return;
    const body = {
      run: { id: run.id, flowId: run.flowId, flowVersion: run.flowVersion, messageId: run.messageId },
      flow: this.flow.key,
      error,
      input: { body: this.input.body, headers: this.input.headers, query: this.input.query },
    };
    const started = await this.sink.startFlow(run, failureFlow, body, {
      deliveryId: `${FAILURE_DELIVERY}${run.id}`,
      trace: this.trace,
    });
    if (!started) this.log().warn({ failureFlow }, 'the failure flow is not active: nothing started');
  }

  /** `$document(space, key)`, read once per pass. */
  private documentReads?: DocumentReader;
  private readonly document: DocumentReader = (space, key) =>
    (this.documentReads ??= documentReader(this.options.store, this.state.run.tenantId))(space, key);

  /** Runs one node, as a span of the run's trace when it is traced; an outcome when the graph's walk ends here. */
  private async runNode(
    node: CompiledNode,
    scope: GraphScope,
    key: string,
    checkpoint: Step | undefined,
  ): Promise<GraphOutcome | undefined> {
    const waiting = checkpoint?.status === 'waiting' ? checkpoint : undefined;
    const { tracer } = this.options;
    if (!scope.trace || !tracer?.enabled) return this.attemptNode(node, scope, key, waiting);
    const span = new NodeSpan(tracer, scope.trace, this.state.run, node, key, (waiting?.attempts ?? 0) + 1);
    let outcome: GraphOutcome | undefined;
    try {
      outcome = await this.attemptNode(node, scope, key, waiting, span);
    } catch (error) {
      span.end(undefined, 'error');
      throw error;
    }
    const ended = outcome === undefined ? 'succeeded' : outcome.kind === 'stopped' ? outcome.status : outcome.kind;
    span.end(
      ended === 'wait' ? 'waiting' : ended,
      outcome?.kind === 'failed' || outcome?.kind === 'wait' ? outcome.error.kind : undefined,
    );
    return outcome;
  }

  /**
   * One attempt at a node; `waiting`, its checkpoint when an earlier pass left it waiting (a retry, a wait, a call):
   * its failures so far count, and its step keeps that first start, so that it shows how long the node took.
   */
  private async attemptNode(
    node: CompiledNode,
    scope: GraphScope,
    key: string,
    waiting: Step | undefined,
    span?: NodeSpan,
  ): Promise<GraphOutcome | undefined> {
    const startedAt = waiting?.startedAt ?? new Date().toISOString();
    const failuresSoFar = waiting?.attempts ?? 0;
    const attempt = failuresSoFar + 1;
    const exchanges: Exchange[] | undefined = this.options.recordExchanges ? [] : undefined;
    const step = (status: Step['status'], attempts: number, output: unknown, error: ErrorRecord | null): Step => {
      const made: Step = {
        runId: this.state.run.id,
        key,
        nodeId: node.id,
        status,
        attempts,
        output,
        error,
        startedAt,
        finishedAt: new Date().toISOString(),
      };
      // Kept with every secret the run holds masked, as its output is.
      if (exchanges?.length) made.exchanges = this.redactor.redact(exchanges);
      return made;
    };
    const fail = (record: ErrorRecord): GraphOutcome => {
      this.unsaved.push(step('failed', attempt, null, record));
      return { kind: 'failed', error: record, attempts: attempt };
    };

    let result: unknown;
    try {
      result = await this.runner(node).run(node, {
        scope,
        key,
        attempt,
        get trace() {
          return span?.context;
        },
        exchanges,
      });
    } catch (thrown) {
      const error = this.redactError(toOperationError(thrown));
      const record: ErrorRecord = { ...toErrorRecord(error), node: node.id };
      // Stopped because the worker shuts down (a deploy): handed back at once, the attempt not charged to the node.
      if (this.shutdown.aborted) {
        this.unsaved.push(step('waiting', failuresSoFar, null, record));
        return { kind: 'wait', delayMs: 0, error: record };
      }
      if (error.kind === 'later') {
        this.unsaved.push(step('waiting', failuresSoFar, null, record));
        return { kind: 'wait', delayMs: this.delay(error.retryAfterMs ?? LATER_DEFAULT_MS), error: record };
      }
      if (error.kind === 'retryable' && attempt < node.retry.maxAttempts) {
        this.unsaved.push(step('waiting', attempt, null, record));
        const delayMs = Math.max(error.retryAfterMs ?? 0, backoff(node.retry.backoffMs, attempt));
        return { kind: 'wait', delayMs: this.delay(delayMs), error: record };
      }
      return fail(
        error.kind === 'retryable'
          ? { ...record, message: `gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${record.message}` }
          : record,
      );
    }

    if (result instanceof StopSignal) {
      this.unsaved.push(step(result.status, attempt, { reason: result.reason }, null));
      return { kind: 'stopped', status: result.status };
    }
    // An output that cannot be stored fails the same way on every try: the node fails at once.
    let stored: { text: string; value: unknown };
    try {
      stored = storableJson(this.redactor.redact(result ?? null));
    } catch (thrown) {
      return fail({
        kind: 'permanent',
        message: `output cannot be stored: ${toOperationError(thrown).message}`,
        node: node.id,
      });
    }
    const size = Buffer.byteLength(stored.text);
    if (size > this.options.maxOutputBytes)
      return fail({
        kind: 'permanent',
        message: `output of ${size} bytes exceeds the limit of ${this.options.maxOutputBytes}`,
        node: node.id,
      });
    this.unsaved.push(step('succeeded', attempt, stored.value, null));
    scope.outputs[node.id] = stored.value;
    return undefined;
  }

  private delay(ms: number): number {
    return Math.min(Math.max(0, ms), this.options.maxRetryDelayMs);
  }

  async subStep<T>(call: NodeCall, node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T> {
    const key = `${call.key}/${name}`;
    const done = this.checkpoints.get(key);
    if (done?.status === 'succeeded') return done.output as T;
    const startedAt = new Date().toISOString();
    const sentBefore = call.exchanges?.length ?? 0;
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
    // What the sub-step sent is kept with it: a later attempt of its node, which does not send it again, has the rest.
    const sent = call.exchanges?.splice(sentBefore);
    if (sent?.length) record.exchanges = this.redactor.redact(sent);
    this.unsaved.push(record);
    await this.save();
    this.checkpoints.set(key, record);
    return value;
  }

  private runner(node: CompiledNode): NodeRunner<unknown> {
    let runner = this.runners.get(node.kind);
    if (!runner) {
      runner = node.kind.runner(this);
      this.runners.set(node.kind, runner);
    }
    return runner;
  }

  /** Made when a node first logs: most passes log nothing. */
  get runLog(): RunLogRecorder {
    return (this.recorder ??= new RunLogRecorder(this.redactor));
  }

  private async save(outcome?: RunOutcome) {
    const saved =
      outcome && this.budgetWaits.ms > 0 ? { ...outcome, budgetWaitMs: Math.round(this.budgetWaits.ms) } : outcome;
    await this.sink.save(this.state.run, this.unsaved.splice(0), saved, this.recorder?.take() ?? []);
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

  log(): Logger {
    const { run } = this.state;
    return (this.logger ??= this.options.logger.child({
      tenantId: run.tenantId,
      flowId: run.flowId,
      runId: run.id,
      ...(this.trace && logFieldsOf(this.trace)),
    }));
  }
}

/** A `later` error of a request that waits away for its turn on a budget: when it began, what it waited in place. */
function budgetWait(error: ErrorRecord | null): { since: number; waitedMs: number } | undefined {
  const details = error?.kind === 'later' ? error.details : undefined;
  return typeof details?.budget === 'string' && typeof details.since === 'number'
    ? { since: details.since, waitedMs: Number(details.waitedMs ?? 0) }
    : undefined;
}

/** How long the run waited away for its turn on a budget, when that ended its last pass. */
function waitedAway(error: ErrorRecord | null): number {
  const wait = budgetWait(error);
  return wait ? Math.max(0, Date.now() - wait.since) : 0;
}
