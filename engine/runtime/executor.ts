import type { Logger } from 'pino';
import { OperationError, permanent, retryable, toErrorRecord, toOperationError, type ErrorRecord } from '../errors.ts';
import type { CompiledFlow, CompiledNode } from '../flow/compile.ts';
import { truthy, type Bindings } from '../flow/expression.ts';
import { StopSignal, type MessageInput, type OperationContext } from '../operations.ts';
import type { Keyring } from '../secrets/keyring.ts';
import { isTerminal, type RunState, type Step, type Store, type TerminalRunStatus } from '../store/port.ts';
import type { CompiledFlowCache } from './flow-cache.ts';
import { redactSecrets } from './redact.ts';

/** What the queue should do with the job after one pass of the executor. */
export type PassOutcome =
  | { kind: 'finished'; status: TerminalRunStatus; error?: ErrorRecord }
  /** A node waits: take the job up again after `delayMs` (a retry, or a "later"). */
  | { kind: 'wait'; delayMs: number; reason: string }
  /** The run does not exist (its tenant was deleted): nothing to do. */
  | { kind: 'gone' };

export interface ExecutorOptions {
  store: Store;
  flows: CompiledFlowCache;
  keyring: Keyring;
  logger: Logger;
  /** Largest JSON a node may store as its output. */
  maxOutputBytes: number;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
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

  async execute(tenantId: string, runId: string, shutdown: AbortSignal): Promise<PassOutcome> {
    const { store } = this.options;
    const state = await store.loadRunState(tenantId, runId);
    if (!state) return { kind: 'gone' };
    if (isTerminal(state.run.status)) return { kind: 'finished', status: state.run.status, error: state.run.error ?? undefined };

    let flow: CompiledFlow;
    try {
      flow = await this.options.flows.get(tenantId, state.run.flowId, state.run.flowVersion);
    } catch (error) {
      if (error instanceof Error && error.name === 'NotFoundError') return this.finish(state, 'failed', permanent(error.message));
      throw error;
    }
    if (!(await store.startRun(tenantId, runId))) return this.execute(tenantId, runId, shutdown);
    return new RunPass(this.options, state, flow, await this.secretValues(tenantId, flow), shutdown).run(await this.variables(tenantId, flow));
  }

  private async variables(tenantId: string, flow: CompiledFlow) {
    const names = flow.references.vars;
    return names !== '*' && names.size === 0 ? {} : this.options.store.variableValues(tenantId, names);
  }

  private async secretValues(tenantId: string, flow: CompiledFlow): Promise<Record<string, string>> {
    const names = flow.references.secrets;
    if (names !== '*' && names.size === 0) return {};
    const sealed = await this.options.store.sealedSecrets(tenantId, names);
    return Object.fromEntries(sealed.map((secret) => [secret.name, this.options.keyring.open(secret, secretContext(tenantId, secret.name))]));
  }

  private async finish(state: RunState, status: TerminalRunStatus, error?: OperationError): Promise<PassOutcome> {
    const record = error ? toErrorRecord(error) : undefined;
    await this.options.store.finishRun(state.run.tenantId, state.run.id, status, record ?? null);
    return { kind: 'finished', status, error: record };
  }
}

/** The additional data a secret is sealed with: its tenant and name. */
export const secretContext = (tenantId: string, name: string) => `secret\0${tenantId}\0${name}`;

/** One pass over one run: holds the run's bindings and checkpoints. */
class RunPass {
  private readonly checkpoints: Map<string, Step>;
  private readonly outputs: Record<string, unknown> = {};
  private readonly input: MessageInput;
  private readonly secretList: string[];
  private readonly logger: Logger;

  constructor(
    private readonly options: ExecutorOptions,
    private readonly state: RunState,
    private readonly flow: CompiledFlow,
    private readonly secrets: Record<string, string>,
    private readonly shutdown: AbortSignal,
  ) {
    this.checkpoints = new Map(state.steps.map((step) => [step.key, step]));
    const { message } = state;
    this.input = { messageId: message.id, receivedAt: message.receivedAt, body: message.body, headers: message.headers, query: message.query };
    this.secretList = Object.values(secrets).filter((value) => value.length > 0);
    this.logger = options.logger.child({ tenantId: state.run.tenantId, flowId: state.run.flowId, runId: state.run.id });
  }

  async run(vars: Record<string, unknown>): Promise<PassOutcome> {
    const bindings: Bindings = { input: this.input, steps: this.outputs, vars, secrets: this.secrets };
    const done = new Set<string>([TRIGGER]);
    for (const node of this.flow.nodes) {
      if (!(await this.activated(node, done, bindings))) continue;
      const checkpoint = this.checkpoints.get(node.id);
      if (checkpoint?.status === 'succeeded') {
        this.outputs[node.id] = checkpoint.output;
        done.add(node.id);
        continue;
      }
      const outcome = await this.runNode(node, bindings, checkpoint);
      if (outcome) return outcome;
      done.add(node.id);
    }
    return this.finish('succeeded');
  }

  private async activated(node: CompiledNode, done: Set<string>, bindings: Bindings) {
    for (const edge of node.incoming) {
      if (!done.has(edge.from)) continue;
      if (!edge.when || truthy(await edge.when.evaluate(bindings))) return true;
    }
    return false;
  }

  /** Runs one node; returns an outcome when the pass must end here. */
  private async runNode(node: CompiledNode, bindings: Bindings, checkpoint: Step | undefined): Promise<PassOutcome | undefined> {
    const startedAt = new Date().toISOString();
    const failuresSoFar = checkpoint?.status === 'waiting' ? checkpoint.attempts : 0;
    const attempt = failuresSoFar + 1;
    const step = (status: Step['status'], attempts: number, output: unknown, error: ErrorRecord | null): Step => ({
      runId: this.state.run.id, key: node.id, nodeId: node.id, status, attempts, output, error, startedAt, finishedAt: new Date().toISOString(),
    });
    const save = (record: Step) => this.options.store.saveStep(this.state.run.tenantId, record);

    let result: unknown;
    try {
      result = await this.invoke(node, bindings, attempt);
    } catch (thrown) {
      const error = this.redactError(toOperationError(thrown));
      const record: ErrorRecord = { ...toErrorRecord(error), node: node.id };
      if (error.kind === 'later') {
        await save(step('waiting', failuresSoFar, null, record));
        await this.options.store.markRunWaiting(this.state.run.tenantId, this.state.run.id, record);
        return { kind: 'wait', delayMs: this.cap(error.retryAfterMs ?? LATER_DEFAULT_MS), reason: error.message };
      }
      if (error.kind === 'retryable' && attempt < node.retry.maxAttempts) {
        await save(step('waiting', attempt, null, record));
        await this.options.store.markRunWaiting(this.state.run.tenantId, this.state.run.id, record);
        return { kind: 'wait', delayMs: this.cap(Math.max(error.retryAfterMs ?? 0, backoff(node.retry.backoffMs, attempt))), reason: error.message };
      }
      const final = error.kind === 'retryable' ? { ...record, message: `gave up after ${attempt} attempts: ${record.message}` } : record;
      await save(step('failed', attempt, null, final));
      this.logger.warn({ nodeId: node.id, error: final }, 'run failed');
      return this.finishWith('failed', final);
    }

    if (result instanceof StopSignal) {
      await save(step(result.status, attempt, { reason: result.reason }, null));
      return this.finishWith(result.status, null);
    }
    const output = redactSecrets(result ?? null, this.secretList);
    const size = Buffer.byteLength(JSON.stringify(output));
    if (size > this.options.maxOutputBytes) {
      const record: ErrorRecord = { kind: 'permanent', message: `output of ${size} bytes exceeds the limit of ${this.options.maxOutputBytes}`, node: node.id };
      await save(step('failed', attempt, null, record));
      return this.finishWith('failed', record);
    }
    await save(step('succeeded', attempt, output, null));
    this.outputs[node.id] = output;
    return undefined;
  }

  private async invoke(node: CompiledNode, bindings: Bindings, attempt: number): Promise<unknown> {
    const config = node.operation.config.validate(await node.config.evaluate(bindings), `$.nodes.${node.id}.config`);
    const controller = new AbortController();
    const abort = () => controller.abort(this.shutdown.reason);
    this.shutdown.addEventListener('abort', abort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = retryable(`node timed out after ${node.timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, node.timeoutMs);
    });
    try {
      return await Promise.race([node.operation.definition.run(this.context(node, config, attempt, controller.signal)), timeout]);
    } finally {
      clearTimeout(timer);
      this.shutdown.removeEventListener('abort', abort);
    }
  }

  private context(node: CompiledNode, config: unknown, attempt: number, signal: AbortSignal): OperationContext<unknown> {
    const { run } = this.state;
    return {
      config,
      input: this.input,
      steps: this.outputs,
      logger: this.logger.child({ nodeId: node.id }),
      idempotencyKey: `${run.id}.${node.id}`,
      signal,
      tenantId: run.tenantId,
      flowId: run.flowId,
      runId: run.id,
      nodeId: node.id,
      attempt,
      step: (name, fn) => this.subStep(node, name, fn),
      stop: (status, reason) => new StopSignal(status, reason),
    };
  }

  private async subStep<T>(node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T> {
    const key = `${node.id}/${name}`;
    const done = this.checkpoints.get(key);
    if (done?.status === 'succeeded') return done.output as T;
    const startedAt = new Date().toISOString();
    const value = await fn();
    const record: Step = {
      runId: this.state.run.id, key, nodeId: node.id, status: 'succeeded', attempts: 1,
      output: redactSecrets(value ?? null, this.secretList), error: null, startedAt, finishedAt: new Date().toISOString(),
    };
    await this.options.store.saveStep(this.state.run.tenantId, record);
    this.checkpoints.set(key, record);
    return value;
  }

  private redactError(error: OperationError): OperationError {
    if (this.secretList.length === 0) return error;
    const message = redactSecrets(error.message, this.secretList) as string;
    const details = redactSecrets(error.details, this.secretList) as Record<string, unknown> | undefined;
    return new OperationError(error.kind, message, { retryAfterMs: error.retryAfterMs, details });
  }

  private cap(delayMs: number) {
    return Math.min(Math.max(0, delayMs), this.options.maxRetryDelayMs);
  }

  private finish(status: TerminalRunStatus) {
    return this.finishWith(status, null);
  }

  private async finishWith(status: TerminalRunStatus, error: ErrorRecord | null): Promise<PassOutcome> {
    await this.options.store.finishRun(this.state.run.tenantId, this.state.run.id, status, error);
    return error ? { kind: 'finished', status, error } : { kind: 'finished', status };
  }
}

/** Exponential backoff with "equal jitter": half fixed, half random, so retries of many runs spread out. */
function backoff(baseMs: number, attempt: number) {
  const exponential = baseMs * 2 ** (attempt - 1);
  return exponential / 2 + Math.random() * (exponential / 2);
}
