import type { Logger } from 'pino';
import type { ErrorRecord, Exchange, FieldError, FlowDocument } from '../model/index.ts';
import type { Bindings, Expression, TemplateCompiler } from '../expressions/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import type { ActionRunner, MessageInput, OperationRegistry } from '../plugins/index.ts';
import type { Keyring, SecretRedactor } from '../secrets/index.ts';
import type { BatchStore, DataSpaceStore, DestinationStore, Run, RunStore } from '../store/index.ts';
import type { SpanContext } from '../telemetry/index.ts';
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
  /** `error`: an error path, followed when `from` fails for good. */
  on: 'success' | 'error';
  when?: Expression;
}

/** Nodes in the order they run, entered from `entry` (`trigger` for a flow, `item` for a loop's body). */
export interface CompiledGraph {
  entry: string;
  nodes: CompiledNode[];
  /**
   * The error edges leaving each node that has some: a failure one of them takes (its `when`, if any, holds) is
   * handled, not the graph's end.
   */
  errorPaths: ReadonlyMap<string, readonly CompiledEdge[]>;
}

/** The failures a graph's walk went on past: an error path took them, or a loop ran its other items. */
export interface HandledFailures {
  first: ErrorRecord;
  count: number;
}

/** A node ready to run: what every node has, and `spec`, the part its kind compiled. */
export interface CompiledNode<Spec = unknown> {
  id: string;
  /** What the document names it to run (`http.request`, `loop`): what its trace spans are called. */
  operation: string;
  kind: NodeKind<Spec>;
  spec: Spec;
  retry: RetryPolicy;
  timeoutMs: number;
  incoming: CompiledEdge[];
  /** The nodes whose outputs its own expressions read by name (`$steps.<id>`). */
  reads: ReadonlySet<string>;
}

/** What compiling one node may use, and where its problems and references go. */
export interface NodeScope {
  /** JSON path of the node in the document, e.g. `$.nodes[2]`. */
  readonly path: string;
  readonly registry: OperationRegistry;
  readonly errors: FieldError[];
  /**
   * Compiles the node's `{{ }}` values; its problems and what they read are collected with the node's
   * (the references a run loads, the `$steps` checked against the graph).
   */
  readonly templates: TemplateCompiler;
  /** Compiles a graph inside this node (a loop's body), its node ids unique across the flow. */
  compileGraph(nodes: unknown[], edges: EdgeDocument[], path: string, entry: string): CompiledGraph | undefined;
}

export type EdgeDocument = FlowDocument['edges'][number];

/**
 * One kind of node: how it is compiled at publish and how it runs in a pass. The compiler and the
 * pass know nodes only through this interface, so a new kind is one module (and its line in
 * `kinds.ts`).
 */
export interface NodeKind<Spec = unknown> {
  /** Shown in errors. */
  readonly name: string;
  /** Its node may answer the delivery that started the run: the flow URL waits for it (a reply). */
  readonly answersDelivery?: boolean;
  /** For a kind authors name in `operation` (`loop`): what the API reference shows of it. */
  readonly reference?: NodeKindReference;
  /** Whether this kind compiles the document node; the first kind in `NODE_KINDS` to claim it does. */
  claims(node: NodeDocument, registry: OperationRegistry): boolean;
  /** The node's own part, compiled once; problems go to `scope.errors` (undefined when there are some). */
  compile(node: NodeDocument, scope: NodeScope): Spec | undefined;
  /**
   * Problems only a whole graph shows, once its nodes are compiled: `at` is the graph's path (`$` for the
   * flow, `$.nodes[2]` for a loop's body).
   */
  checkGraph?(nodes: ReadonlyMap<string, CompiledNode>, documents: readonly NodeDocument[], at: string): FieldError[];
  /** Whether completing the node is a side effect, checkpointed at once (else with the pass's next write). */
  hasSideEffects(spec: Spec): boolean;
  /** The failures its output says it went on past (a loop's failed items): they are the run's too. */
  handledIn?(output: unknown): HandledFailures | undefined;
  /** What runs this kind's nodes in one pass; made once per pass, when the pass first meets the kind. */
  runner(host: NodeHost): NodeRunner<Spec>;
}

export interface NodeKindReference {
  title: string;
  /** Plain text: what the node does, its output, its limits. */
  description: string;
  configSchema: object;
  /** Whether running it changes something outside the run (calling a flow, answering the sender). */
  sideEffects: boolean;
}

/** How a pass goes on after a node: to the nodes after it, or to the run's end (succeeded). */
export type AfterNode = 'next' | 'end';

export interface NodeRunner<Spec> {
  /**
   * Runs the node once: its output, or a thrown error whose kind (retryable, permanent, later) the pass
   * turns into a retry, a wait or the run's failure.
   */
  run(node: CompiledNode<Spec>, call: NodeCall): Promise<unknown>;
  /** Once the node is done (in this pass or an earlier one): whether the pass goes on to the next nodes. */
  after?(node: CompiledNode<Spec>): AfterNode;
}

/** Where a graph's nodes run: the prefix of their step keys and what their expressions see. */
export interface GraphScope {
  /** `''` for the flow; `each[3].` for the fourth item of loop `each` (or `each[<key>].`). */
  readonly prefix: string;
  /** `$steps`: the outputs of the nodes done so far, this graph's and those around it. */
  readonly outputs: Record<string, unknown>;
  readonly bindings: Bindings;
  /** The span its nodes' spans belong to (the run's, or a loop node's), when tracing is on. */
  readonly trace?: SpanContext;
}

/** One call of a node's runner. */
export interface NodeCall {
  readonly scope: GraphScope;
  /** The node's step key, unique in the run: its id after its scope's prefix. */
  readonly key: string;
  readonly attempt: number;
  /**
   * The span of this attempt, when tracing is on: its operation's requests belong to it. Reading it makes the span:
   * a pure node's attempt is one only when something asks for it or the attempt does not simply succeed.
   */
  readonly trace?: SpanContext;
  /**
   * What this attempt's requests sent and got back, in order: its step keeps them, secrets masked (decision 29);
   * undefined where steps keep none (RECORD_EXCHANGES).
   */
  readonly exchanges?: Exchange[];
}

/** How a graph's walk ended. */
export type GraphOutcome =
  /**
   * Every activated node is done; `last` is the output of the last one that ran. `handled`: nodes failed, and
   * error paths (or a loop) went on past them.
   */
  | { kind: 'done'; last: unknown; handled?: HandledFailures }
  /** A node stopped the walk (a filter): the run (or the loop's item) ends with that status. */
  | { kind: 'stopped'; status: 'filtered' | 'skipped' | 'cancelled' }
  /** A node failed for good, after `attempts` tries. */
  | { kind: 'failed'; error: ErrorRecord; attempts?: number }
  /** A node waits (a retry, or a "later"): the pass ends, and a later one goes on from the checkpoints. */
  | { kind: 'wait'; delayMs: number; error: ErrorRecord };

/**
 * What a pass (RunPass, the run's lifecycle) lends the node it runs: the run and its input, the
 * outputs so far, its memoized steps, and the services a node reaches out with.
 */
export interface NodeHost {
  readonly run: Run;
  readonly input: MessageInput;
  /** The flow's scope: `$steps` of its top-level nodes. */
  readonly outputs: Record<string, unknown>;
  readonly sink: RunSink;
  /** Outbound HTTP on sockets of this run's tenant only. */
  readonly http: HttpClient;
  /** Every secret value this pass has opened: redacted from what it stores. */
  readonly redactor: SecretRedactor;
  readonly shutdown: AbortSignal;
  readonly progress: (percent: number) => void;
  readonly options: {
    store: BatchStore & DataSpaceStore & DestinationStore & Pick<RunStore, 'getRun'>;
    actions: ActionRunner;
    keyring: Keyring;
    logger: Logger;
    /** Largest JSON a node may store as its output (MAX_STEP_OUTPUT_BYTES). */
    maxOutputBytes: number;
    /** Whether a step keeps the requests its operation sent and their answers (RECORD_EXCHANGES). */
    recordExchanges: boolean;
  };
  /** A named step of the node called, run once per run: its result is checkpointed and handed back later. */
  subStep<T>(call: NodeCall, node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T>;
  /** Walks a graph (a loop item's body) in a scope of its own, with the pass's checkpoints, retries and waits. */
  runGraph(graph: CompiledGraph, scope: GraphScope): Promise<GraphOutcome>;
  /** The pass's logger (tenant, flow and run named). */
  log(): Logger;
  /** What nodes log for the run's Logs, saved with the pass's next checkpoint. */
  readonly runLog: RunLogRecorder;
}
