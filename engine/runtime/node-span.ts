import type { CompiledNode } from '../nodes/index.ts';
import type { Run } from '../store/index.ts';
import type { SpanContext, Tracer, TraceSpan } from '../telemetry/index.ts';

/**
 * The span of one attempt at a node, in the run's trace. A side-effecting node's attempt is always one. A pure node's
 * (a transform, a filter) is one only when it tells something: something inside it is a span (a request, a called
 * flow's run, a loop's items), or it does not simply succeed. A pure node that just succeeds takes microseconds: a
 * span for each made traces longer without telling more, and was a fifth of what tracing cost the worker; its step
 * keeps its timing.
 */
export class NodeSpan {
  private span?: TraceSpan;
  /** When the attempt began, for a span made after it did. */
  private readonly startTime: number;

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: SpanContext,
    private readonly run: Pick<Run, 'id'>,
    private readonly node: CompiledNode,
    private readonly key: string,
    private readonly attempt: number,
  ) {
    this.startTime = performance.now();
    if (node.kind.hasSideEffects(node.spec)) this.open();
  }

  /** The span's context, for the spans inside it: asking makes the span. */
  get context(): SpanContext {
    return this.open().context;
  }

  /** Ends the attempt: `outcome` as its step says it; with `errorType`, its error's kind. */
  end(outcome: string | undefined, errorType?: string) {
    if (!this.span && outcome === 'succeeded' && errorType === undefined) return;
    const span = this.open();
    if (outcome !== undefined) span.set({ 'tributary.node.outcome': outcome });
    span.end(errorType);
  }

  private open(): TraceSpan {
    const { node, key } = this;
    this.span ??= this.tracer.start(node.operation, {
      kind: 'internal',
      parent: this.parent,
      attributes: {
        'tributary.node.id': node.id,
        'tributary.node.operation': node.operation,
        'tributary.node.attempt': this.attempt,
        'tributary.step.key': key === node.id ? undefined : key,
        'tributary.run.id': this.run.id,
      },
      startTime: this.startTime,
    });
    return this.span;
  }
}
