import type { Logger } from 'pino';
import type { HttpClient } from '../outbound/index.ts';
import {
  OperationError,
  toErrorRecord,
  toOperationError,
  type ErrorRecord,
  JsonText,
  parseOnRead,
  storableJson,
} from '../model/index.ts';
import type { CompiledFlow } from '../flow/index.ts';
import { TENANT, type Bindings } from '../expressions/index.ts';
import { StopSignal, type MessageInput } from '../plugins/index.ts';
import { SecretRedactor } from '../secrets/index.ts';
import type { Run, RunOutcome, RunState, Step, TerminalRunStatus } from '../store/index.ts';
import {
  type CompiledNode,
  isActivated,
  type NodeHost,
  type NodeKind,
  type NodeRunner,
  RunLogRecorder,
  type RunSink,
} from '../nodes/index.ts';
import type { PassOutcome } from './pass-outcome.ts';

export type RunPassOptions = NodeHost['options'] & {
  /** The operations' outbound HTTP, with this deployment's address policy (each pass takes its tenant's). */
  http: HttpClient;
  /** Largest JSON a node may store as its output. */
  maxOutputBytes: number;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
};

const TRIGGER = 'trigger';
const LATER_DEFAULT_MS = 60_000;

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

  get run(): Run {
    return this.state.run;
  }

  async execute(): Promise<PassOutcome> {
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
        activated = await isActivated(node, done, bindings);
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
      if (this.runner(node).after?.(node) === 'end') return this.end({ status: 'succeeded', error: null });
      if (checkpoint?.status === 'succeeded') continue;
      // A side effect is recorded before anything else happens; after the last node, the run's end records it.
      if (node.kind.hasSideEffects(node.spec) && node !== last) await this.save();
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
      result = await this.runner(node).run(node, bindings, attempt);
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

  async subStep<T>(node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T> {
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
    await this.sink.save(this.state.run, this.unsaved.splice(0), outcome, this.recorder?.take() ?? []);
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

  log(): Logger {
    const { run } = this.state;
    return (this.logger ??= this.options.logger.child({ tenantId: run.tenantId, flowId: run.flowId, runId: run.id }));
  }
}

/** Exponential backoff with "equal jitter": half fixed, half random, so retries of many runs spread out. */
function backoff(baseMs: number, attempt: number) {
  const exponential = baseMs * 2 ** (attempt - 1);
  return exponential / 2 + Math.random() * (exponential / 2);
}
