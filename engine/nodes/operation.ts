import type { Logger } from 'pino';
import { fieldErrors, type OperationError, permanent, retryable, ValidationError } from '../model/index.ts';
import type { Bindings, Template } from '../expressions/index.ts';
import {
  StopSignal,
  type BatchHandle,
  type OpenedDestination,
  type OperationContext,
  openDestination,
  type RegisteredOperation,
} from '../plugins/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import type { SecretRedactor } from '../secrets/index.ts';
import { staticConfigErrors } from './checks.ts';
import type { CompiledNode, NodeCall, NodeDocument, NodeHost, NodeKind, NodeRunner, NodeScope } from './node-kind.ts';
import type { Window } from './run-sink.ts';

/** An operation node: the registered operation (at its major version) and its config's template. */
export interface OperationSpec {
  operation: RegisteredOperation;
  config: Template;
  /** The config's strings holding `{{ }}`, by JSON pointer: a config that fails its schema quotes them. */
  dynamic: ReadonlyMap<string, string>;
}

type OperationNode = CompiledNode<OperationSpec>;

/** A node that runs a registered operation (or a tenant's action): every node a built-in kind does not claim. */
export const operationKind: NodeKind<OperationSpec> = {
  name: 'operation',
  claims: () => true,
  compile: compileOperation,
  hasSideEffects: (spec) => spec.operation.definition.sideEffects,
  runner: (host) => new OperationStep(host),
};

export function compileOperation(node: NodeDocument, scope: NodeScope): OperationSpec | undefined {
  const { path, registry, errors } = scope;
  for (const part of ['nodes', 'edges'] as const)
    if (node[part] !== undefined)
      errors.push({ path: `${path}.${part}`, message: 'only a loop has a body of nodes and edges', node: node.id });
  const operation = registry.get(node.operation, node.operationVersion);
  if (!operation) {
    const majors = registry.majors(node.operation);
    errors.push(
      majors.length > 0 && node.operationVersion !== undefined
        ? {
            path: `${path}.operationVersion`,
            message: `${node.operation} has no major version ${node.operationVersion} (it has ${majors.join(', ')})`,
            node: node.id,
          }
        : { path: `${path}.operation`, message: `is not a registered operation: ${node.operation}`, node: node.id },
    );
    return undefined;
  }
  const config = node.config ?? {};
  const template = scope.templates.compile(config, `${path}.config`);
  const { dynamic } = scope.templates;
  errors.push(...staticConfigErrors(operation.config, config, dynamic.keys(), `${path}.config`, node.id));
  return { operation, config: template, dynamic };
}

/**
 * What an operation node does in a pass: resolve its config, call its operation with a context
 * (its run, its memoized steps, destinations, data spaces, batches, logs), under its timeout and the
 * worker's shutdown, or describe what it would send in a dry run. What becomes of the result or the
 * error (checkpoint, retry, wait, failure) is the pass's business (RunPass).
 */
class OperationStep implements NodeRunner<OperationSpec> {
  /** Destinations opened in this pass, by name: each once, its credentials added to the redactor. */
  private readonly destinations = new Map<string, Promise<OpenedDestination>>();

  constructor(private readonly host: NodeHost) {}

  async run(node: OperationNode, call: NodeCall): Promise<unknown> {
    const { shutdown } = this.host;
    const { operation } = node.spec;
    const { bindings } = call.scope;
    const resolved = await node.spec.config.evaluate(bindings);
    let config: unknown;
    try {
      config = operation.config.validate(resolved, `$.nodes.${node.id}.config`);
    } catch (error) {
      throw error instanceof ValidationError ? configFailure(node, resolved, bindings) : error;
    }
    // The abort signal is made only for operations that ask for it (an AbortController is not free).
    let controller: AbortController | undefined;
    const abortOnShutdown = () => controller?.abort(shutdown.reason);
    const signal = () => {
      if (!controller) {
        controller = new AbortController();
        if (shutdown.aborted) controller.abort(shutdown.reason);
        else shutdown.addEventListener('abort', abortOnShutdown, { once: true });
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
      const { definition } = operation;
      const ctx = this.context(node, call, config, signal);
      // A dry run changes nothing: a side-effecting operation describes what it would send, if it can, unless
      // its config changes nothing this time (a GET), which runs for real.
      const simulated = this.host.sink.mode === 'dry-run' && definition.sideEffects && !definition.readOnly?.(config);
      if (simulated) this.host.sink.simulated?.(call.key);
      const work = simulated
        ? definition.preview
          ? definition.preview(ctx).then((wouldSend) => ({ dryRun: true, wouldSend }))
          : Promise.resolve({ dryRun: true, notRun: `${definition.name} has side effects and cannot describe them` })
        : definition.run(ctx);
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
      if (controller) shutdown.removeEventListener('abort', abortOnShutdown);
    }
  }

  private context(
    node: OperationNode,
    call: NodeCall,
    config: unknown,
    signal: () => AbortSignal,
  ): OperationContext<unknown> {
    const { host } = this;
    const { run, sink, options } = host;
    let logger: Logger | undefined;
    let http: HttpClient | undefined;
    const stepNames = new Set<string>();
    return {
      config,
      input: host.input,
      steps: call.scope.outputs,
      // Created on first use: most operations never log.
      get logger() {
        return (logger ??= host.runLog.wrap(options.logger, () => host.log().child({ nodeId: node.id }), node.id));
      },
      get signal() {
        return signal();
      },
      // The message's, not the run's: every run of the message (a retry, a takeover, a replay) sends the same key.
      idempotencyKey: `${run.messageId}.${call.key}`,
      // Also made on first use: asking for it makes the node's span, its requests' parent (a pure node has none).
      get http() {
        return (http ??= (call.trace ? host.http.within(call.trace) : host.http).forAttempt(call.exchanges));
      },
      tenantId: run.tenantId,
      flowId: run.flowId,
      runId: run.id,
      nodeId: node.id,
      attempt: call.attempt,
      step: (name, fn) => {
        const refused = stepNameRefusal(name, stepNames);
        if (refused) return Promise.reject(permanent(`ctx.step("${name}") in node ${node.id}: ${refused}`));
        stepNames.add(name);
        return host.subStep(call, node, name, fn);
      },
      destination: (name) => this.destination(name),
      batch: (window) => this.batch(call, node, window),
      action: (name, input, version) =>
        options.actions.run(run.tenantId, name, version, input, `$.nodes.${node.id}.config`),
      dataSpaces: {
        get: (space, key) => options.store.getDocument(run.tenantId, space, key).then((document) => document?.value),
        put: (space, key, value) => sink.putDocument(run, space, key, value),
      },
      incrementalField: {
        get: () => options.store.getIncrementalField(run.tenantId, run.flowId),
        set: (value) => sink.setIncrementalField(run, value),
      },
      testRun: sink.mode === 'test' || sink.mode === 'dry-run',
      progress: host.progress,
      stop: (status, reason) => new StopSignal(status, reason),
    };
  }

  private async batch(call: NodeCall, node: OperationNode, window: Window): Promise<BatchHandle> {
    const { sink, run } = this.host;
    const { id } = await this.host.subStep(call, node, 'batch', async () => ({
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
    const { options, run, redactor } = this.host;
    const opened = await openDestination(options.store, options.keyring, run.tenantId, name);
    if (!opened) throw permanent(`destination "${name}" does not exist`);
    collectStrings(opened.credentials, redactor);
    return opened;
  }
}

/**
 * A resolved config that breaks its operation's schema, explained: each field, the `{{ }}` it came
 * from and what that gave, and first the variables it reads that are not set (the usual cause).
 */
function configFailure(node: OperationNode, resolved: unknown, bindings: Bindings): OperationError {
  const { operation, dynamic } = node.spec;
  const prefix = `$.nodes.${node.id}.config`;
  const problems = operation.config.rawErrors(resolved).filter((error) => error.keyword !== 'propertyNames');
  const unset = new Set<string>();
  const parts = problems.map((problem) => {
    const [field] = fieldErrors([problem], prefix);
    const target =
      problem.keyword === 'required'
        ? `${problem.instancePath}/${String(problem.params.missingProperty)}`
        : problem.instancePath;
    const pointer = [...dynamic.keys()].find((at) => target === at || target.startsWith(`${at}/`));
    if (pointer === undefined) return `${field.path} ${field.message}`;
    const source = dynamic.get(pointer)!;
    for (const name of unsetValues(source, bindings)) unset.add(name);
    return `${field.path} ${field.message} (${source} gave ${preview(valueAt(resolved, pointer))})`;
  });
  const cause = unset.size > 0 ? `${[...unset].join(', ')} ${unset.size === 1 ? 'is' : 'are'} not set: ` : '';
  return permanent(`${cause}${parts.join('; ')}`, { details: { errors: fieldErrors(problems, prefix) } });
}

const NAMED_VALUE = /\$(vars|secrets|platform)\.([A-Za-z_][A-Za-z0-9_]*)/g;

/** The `$vars.X`, `$secrets.X`, `$platform.X` a source reads that the run does not have. */
function unsetValues(source: string, bindings: Bindings): string[] {
  return [...source.matchAll(NAMED_VALUE)]
    .filter(
      ([, kind, name]) =>
        (bindings[kind as 'vars' | 'secrets' | 'platform'] as Record<string, unknown> | undefined)?.[name] ===
        undefined,
    )
    .map(([reference]) => reference);
}

function valueAt(value: unknown, pointer: string): unknown {
  let at = value;
  for (const segment of pointer.split('/').slice(1)) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return at;
}

function preview(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
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
