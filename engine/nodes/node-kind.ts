import type { Logger } from 'pino';
import type { FieldError, FlowDocument } from '../model/index.ts';
import type { Bindings, Expression, ExpressionSandbox, References } from '../expressions/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import type { ActionRunner, MessageInput, OperationRegistry } from '../plugins/index.ts';
import type { Keyring, SecretRedactor } from '../secrets/index.ts';
import type { BatchStore, DataSpaceStore, DestinationStore, Run } from '../store/index.ts';
import type { RunLogRecorder } from './run-log.ts';
import type { RunSink } from './run-sink.ts';

/** A node as the flow document writes it. */
export type NodeDocument = FlowDocument['nodes'][number];

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
}

export interface CompiledEdge {
  from: string;
  when?: Expression;
}

/** A node ready to run: what every node has, and `spec`, the part its kind compiled. */
export interface CompiledNode<Spec = unknown> {
  id: string;
  kind: NodeKind<Spec>;
  spec: Spec;
  retry: RetryPolicy;
  timeoutMs: number;
  incoming: CompiledEdge[];
}

/** What compiling one node may use, and where its problems and references go. */
export interface NodeScope {
  /** JSON path of the node in the document, e.g. `$.nodes[2]`. */
  readonly path: string;
  readonly registry: OperationRegistry;
  readonly sandbox: ExpressionSandbox;
  readonly errors: FieldError[];
  /** What the flow's expressions read (variables, secrets, platform values), merged across nodes. */
  readonly references: References;
}

/**
 * One kind of node: how it is compiled at publish and how it runs in a pass. The compiler and the
 * pass know nodes only through this interface, so a new kind is one module (and its line in
 * `kinds.ts`).
 */
export interface NodeKind<Spec = unknown> {
  /** Shown in errors. */
  readonly name: string;
  /** Whether this kind compiles the document node; the first kind in `NODE_KINDS` to claim it does. */
  claims(node: NodeDocument, registry: OperationRegistry): boolean;
  /** The node's own part, compiled once; problems go to `scope.errors` (undefined when there are some). */
  compile(node: NodeDocument, scope: NodeScope): Spec | undefined;
  /** Problems only the whole flow shows, once every node is compiled. */
  checkFlow?(nodes: ReadonlyMap<string, CompiledNode>, document: FlowDocument): FieldError[];
  /** Whether completing the node is a side effect, checkpointed at once (else with the pass's next write). */
  hasSideEffects(spec: Spec): boolean;
  /** What runs this kind's nodes in one pass; made once per pass, when the pass first meets the kind. */
  runner(host: NodeHost): NodeRunner<Spec>;
}

/** How a pass goes on after a node: to the nodes after it, or to the run's end (succeeded). */
export type AfterNode = 'next' | 'end';

export interface NodeRunner<Spec> {
  /**
   * Runs the node once: its output, or a thrown error whose kind (retryable, permanent, later) the pass
   * turns into a retry, a wait or the run's failure.
   */
  run(node: CompiledNode<Spec>, bindings: Bindings, attempt: number): Promise<unknown>;
  /** Once the node is done (in this pass or an earlier one): whether the pass goes on to the next nodes. */
  after?(node: CompiledNode<Spec>): AfterNode;
}

/**
 * What a pass (RunPass, the run's lifecycle) lends the node it runs: the run and its input, the
 * outputs so far, its memoized steps, and the services a node reaches out with.
 */
export interface NodeHost {
  readonly run: Run;
  readonly input: MessageInput;
  readonly outputs: Record<string, unknown>;
  readonly sink: RunSink;
  /** Outbound HTTP on sockets of this run's tenant only. */
  readonly http: HttpClient;
  /** Every secret value this pass has opened: redacted from what it stores. */
  readonly redactor: SecretRedactor;
  readonly shutdown: AbortSignal;
  readonly progress: (percent: number) => void;
  readonly options: {
    store: BatchStore & DataSpaceStore & DestinationStore;
    actions: ActionRunner;
    keyring: Keyring;
    logger: Logger;
  };
  /** A named step of `node`, run once per run: its result is checkpointed and handed back on later passes. */
  subStep<T>(node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T>;
  /** The pass's logger (tenant, flow and run named). */
  log(): Logger;
  /** What nodes log for the run's Logs, saved with the pass's next checkpoint. */
  readonly runLog: RunLogRecorder;
}
