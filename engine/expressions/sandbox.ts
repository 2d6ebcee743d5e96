import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { permanent, retryable, type JsonText } from '../model/index.ts';

/** The bounds of one tenant expression evaluated in the sandbox. */
export interface SandboxLimits {
  /**
   * The CPU time one evaluation may take (EXPRESSION_TIMEOUT_MS); past it the evaluating process is killed. Time
   * spent waiting for a CPU on a busy machine does not count, up to WAIT_FACTOR times this on the clock.
   */
  timeoutMs: number;
  /** Heap of each sandbox process (EXPRESSION_MEMORY_MB); past it the process dies, not ours. */
  memoryMb: number;
  /** Deepest evaluation (deep recursion fails instead of exhausting the stack). */
  maxDepth: number;
  /** Largest result, as JSON characters, an evaluation may hand back. */
  maxResultBytes: number;
  /** Sandbox processes evaluating at once (EXPRESSION_PROCESSES); more evaluations wait their tenant's turn. */
  processes: number;
}

type SandboxBindings = Record<string, unknown>;
/** `$document(space, key)`: a document's value from one of the tenant's data spaces (undefined when absent). */
export type Lookup = (space: unknown, key: unknown) => Promise<unknown> | unknown;

export type SandboxRequest =
  | {
      kind: 'evaluate';
      id: number;
      source: string;
      bindings: SandboxBindings;
      /** The JSON text of `bindings.input.body`, when it is sent as text. */
      inputBody?: string;
      /** Whether `$document` is bound: in a run, not in an action. */
      documents: boolean;
      /** `clockMs`: how long it may take on the clock (its CPU time is limited from outside, by the parent). */
      limits: Pick<SandboxLimits, 'maxDepth' | 'maxResultBytes'> & { clockMs: number };
    }
  | { kind: 'document'; id: number; lookupId: number; value: unknown };

export type SandboxReply =
  | { kind: 'ready' }
  | { kind: 'document'; id: number; lookupId: number; space: unknown; key: unknown }
  | { kind: 'result'; id: number; json?: string; error?: { limit?: 'time' | 'result'; message: string } };

interface Evaluation {
  id: number;
  source: string;
  bindings: SandboxBindings;
  /** The JSON text of `bindings.input.body`. */
  inputBody?: string;
  document?: Lookup;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

const ENTRY = new URL('./sandbox-process.js', import.meta.url);

/**
 * Where tenant expressions that could run away are evaluated: a pool of child processes, each
 * evaluating one expression at a time under a heap cap, killed at the deadline. Threads are no
 * boundary here: V8 ends the whole process when a thread's heap limit or a size limit is reached
 * ("Fatal JavaScript invalid size error"), while a child process dies alone. Processes start on
 * first use and are replaced when one is killed or dies.
 *
 * Waiting evaluations are served by tenant in turn, one of each tenant's at a time, so a tenant with
 * many slow expressions in flight delays another tenant's by at most one evaluation per busy tenant.
 */
export class ExpressionSandbox {
  private readonly idle: SandboxProcess[] = [];
  private readonly busy = new Set<SandboxProcess>();
  /** Each tenant's waiting evaluations, the tenants in the order of their turns. */
  private readonly waiting = new Map<string, Evaluation[]>();
  private nextId = 1;
  private closed = false;

  constructor(readonly limits: SandboxLimits) {}

  /**
   * Evaluates `source` on `bindings` for `tenant`; `largeBody`, the text of the input's body, is
   * parsed in the sandbox (the event loop here never parses it).
   */
  evaluate(
    source: string,
    bindings: SandboxBindings,
    { document, tenant = '', largeBody }: { document?: Lookup; tenant?: string; largeBody?: JsonText } = {},
  ): Promise<unknown> {
    if (this.closed) return Promise.reject(retryable('the expression sandbox is closed'));
    return new Promise((resolve, reject) => {
      const evaluation = { id: this.nextId++, source, bindings, inputBody: largeBody?.text, document, resolve, reject };
      const queue = this.waiting.get(tenant);
      if (queue) queue.push(evaluation);
      else this.waiting.set(tenant, [evaluation]);
      this.dispatch();
    });
  }

  close() {
    this.closed = true;
    for (const queue of this.waiting.values())
      for (const evaluation of queue) evaluation.reject(retryable('the expression sandbox closed'));
    this.waiting.clear();
    for (const member of [...this.idle.splice(0), ...this.busy]) member.stop();
    this.busy.clear();
  }

  /** The first waiting evaluation of the tenant whose turn it is; that tenant goes to the back of the line. */
  private nextEvaluation(): Evaluation {
    const [tenant, queue] = this.waiting.entries().next().value!;
    this.waiting.delete(tenant);
    const evaluation = queue.shift()!;
    if (queue.length > 0) this.waiting.set(tenant, queue);
    return evaluation;
  }

  private dispatch() {
    while (this.waiting.size > 0) {
      let member = this.idle.pop();
      // A process that died while idle is dropped here.
      while (member && !member.alive) member = this.idle.pop();
      if (!member) {
        if (this.busy.size >= this.limits.processes) return;
        member = new SandboxProcess(this.limits);
      }
      const evaluation = this.nextEvaluation();
      const running = member;
      this.busy.add(running);
      running.run(evaluation).finally(() => {
        this.busy.delete(running);
        if (running.alive) this.idle.push(running);
        else if (!this.closed && this.idle.length === 0) {
          // A killed process is replaced at once, so the next evaluation does not wait for a start.
          this.idle.push(new SandboxProcess(this.limits));
        }
        this.dispatch();
      });
    }
  }
}

/** One child process of the sandbox and the evaluation it is running, if any. */
class SandboxProcess {
  private readonly child: ChildProcess;
  private readonly ready: Promise<void>;
  private current?: Evaluation;
  private killedForTime = false;
  private stopping = false;
  alive = true;

  constructor(private readonly limits: SandboxLimits) {
    this.child = fork(ENTRY, [], {
      execArgv: [`--max-old-space-size=${limits.memoryMb}`, '--max-semi-space-size=8'],
      serialization: 'advanced',
      // V8's fatal report of a runaway expression is not ours to print.
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      env: { NODE_ENV: process.env.NODE_ENV },
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('exit', () => reject(retryable('an expression sandbox process could not start')));
      this.child.once('message', () => resolve());
    });
    this.ready.catch(() => {});
    lowerPriority(this.child);
    this.child.on('exit', () => this.onExit());
    this.child.on('error', () => {});
  }

  async run(evaluation: Evaluation): Promise<void> {
    try {
      await this.ready;
    } catch (error) {
      this.alive = false;
      return evaluation.reject(error as Error);
    }
    // It may have died between starting and now.
    if (!this.alive)
      return evaluation.reject(retryable('an expression sandbox process ended before it could evaluate'));
    const { timeoutMs, maxDepth, maxResultBytes } = this.limits;
    return new Promise<void>((done) => {
      const startedAt = performance.now();
      const cpuAtStart = cpuMsOf(this.child.pid);
      const deadline = () => {
        // A busy machine kept it waiting for a CPU (the sandbox runs at a lower priority): what it has not used yet
        // is still its own, within WAIT_FACTOR times the limit on the clock.
        const used = cpuAtStart === undefined ? undefined : (cpuMsOf(this.child.pid) ?? Infinity) - cpuAtStart;
        if (used !== undefined && used < timeoutMs && performance.now() - startedAt < timeoutMs * WAIT_FACTOR) {
          timer = setTimeout(deadline, Math.max(CPU_TICK_MS, timeoutMs - used));
          return;
        }
        this.killedForTime = true;
        // Already gone (its exit not yet heard): the evaluation ends here all the same.
        if (!this.kill()) this.onExit();
      };
      let timer = setTimeout(deadline, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.current = undefined;
        done();
      };
      const onMessage = (reply: SandboxReply) => {
        if (reply.kind === 'document') return void this.answerLookup(evaluation, reply);
        if (reply.kind !== 'result' || reply.id !== evaluation.id) return;
        finish();
        if (!reply.error) evaluation.resolve(reply.json === undefined ? undefined : JSON.parse(reply.json));
        else evaluation.reject(this.failure(evaluation.source, reply.error));
      };
      this.current = {
        ...evaluation,
        reject: (error) => {
          finish();
          evaluation.reject(error);
        },
      };
      this.child.on('message', onMessage);
      this.send({
        kind: 'evaluate',
        id: evaluation.id,
        source: evaluation.source,
        bindings: evaluation.bindings,
        inputBody: evaluation.inputBody,
        documents: evaluation.document !== undefined,
        limits: { clockMs: timeoutMs * WAIT_FACTOR, maxDepth, maxResultBytes },
      });
    });
  }

  /** Ends the process as its sandbox closes: what it was evaluating can be tried again. */
  stop() {
    this.stopping = true;
    this.kill();
  }

  /** Whether a kill was sent: false when the process had already ended. */
  kill(): boolean {
    this.alive = false;
    return this.child.exitCode === null && this.child.signalCode === null && this.child.kill('SIGKILL');
  }

  private answerLookup(evaluation: Evaluation, request: Extract<SandboxReply, { kind: 'document' }>) {
    Promise.resolve(evaluation.document?.(request.space, request.key)).then(
      (value) => this.send({ kind: 'document', id: request.id, lookupId: request.lookupId, value }),
      () => this.send({ kind: 'document', id: request.id, lookupId: request.lookupId, value: undefined }),
    );
  }

  private send(request: SandboxRequest) {
    if (this.alive && this.child.connected) this.child.send(request, (error) => error && this.kill());
  }

  private onExit() {
    this.alive = false;
    const evaluation = this.current;
    if (!evaluation) return;
    if (this.stopping) return evaluation.reject(retryable('the expression sandbox closed'));
    evaluation.reject(
      this.killedForTime
        ? this.failure(evaluation.source, { limit: 'time', message: '' })
        : permanent(
            `expression stopped: it went past the memory limit of ${this.limits.memoryMb} MB (EXPRESSION_MEMORY_MB) ` +
              `or a size limit of the JavaScript engine (in ${evaluation.source})`,
          ),
    );
  }

  private failure(source: string, error: { limit?: 'time' | 'result'; message: string }) {
    switch (error.limit) {
      case 'time':
        return permanent(
          `expression stopped: it ran past the limit of ${this.limits.timeoutMs} ms (EXPRESSION_TIMEOUT_MS) ` +
            `(in ${source})`,
        );
      case 'result':
        return permanent(`expression stopped: ${error.message} (in ${source})`);
      default:
        return permanent(`expression failed: ${error.message} (in ${source})`);
    }
  }
}

/** How many times its CPU limit an evaluation may take on the clock (waiting for a CPU, or for `$document`). */
const WAIT_FACTOR = 10;
/** The granularity of a process's CPU time in /proc (USER_HZ is 100 on Linux). */
const CPU_TICK_MS = 10;

/** The CPU time (user and system) a process has used, in ms; undefined where /proc cannot say (not Linux). */
function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The fields after the command name (in parentheses, which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * CPU_TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * Tenants' expressions yield the CPU to the platform's own work: when the machine is short of it, intake,
 * dispatch and every tenant's I/O go first, and a tenant's costly expressions take what is left, not the other
 * tenants' share of the process that serves them all.
 */
const SANDBOX_NICENESS = 10;

function lowerPriority(child: ChildProcess) {
  if (child.pid === undefined) return;
  try {
    os.setPriority(child.pid, Math.min(19, os.getPriority() + SANDBOX_NICENESS));
  } catch {
    // A platform that refuses (or a child already gone) keeps the default priority.
  }
}
