/**
 * The kinds of node: the NodeKind contract (compiled at publish, run in a pass), what a pass lends
 * a node (NodeHost, RunSink), the kinds themselves and edge conditions.
 */
export { anyHolds, compileEdge, isActivated } from './edges.ts';
export { kindOf, namedKinds } from './kinds.ts';
export { MAX_LOOP_ITEMS } from './loop.ts';
export type { Reply } from './reply.ts';
export type {
  CompiledEdge,
  CompiledGraph,
  CompiledNode,
  EdgeDocument,
  GraphOutcome,
  GraphScope,
  HandledFailures,
  NodeCall,
  NodeDocument,
  NodeHost,
  NodeKind,
  NodeRunner,
  NodeScope,
  RetryPolicy,
} from './node-kind.ts';
export { LOG_LINES_PER_RUN, RunLogRecorder } from './run-log.ts';
export type { RunSink, StartOptions, Window } from './run-sink.ts';
