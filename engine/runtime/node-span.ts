import type { CompiledNode } from '../nodes/index.ts';
import type { Run } from '../store/index.ts';
import type { SpanContext, Tracer, TraceSpan } from '../telemetry/index.ts';

/** A span for one attempt at a node, a child of `parent` in the run's trace. */
export function nodeSpan(
  tracer: Tracer,
  parent: SpanContext,
  run: Pick<Run, 'id'>,
  node: CompiledNode,
  key: string,
  attempt: number,
): TraceSpan {
  return tracer.start(node.operation, {
    kind: 'internal',
    parent,
    attributes: {
      'tributary.node.id': node.id,
      'tributary.node.operation': node.operation,
      'tributary.node.attempt': attempt,
      'tributary.step.key': key === node.id ? undefined : key,
      'tributary.run.id': run.id,
    },
  });
}
