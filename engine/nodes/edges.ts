import { type Bindings, type Expression, truthy } from '../expressions/index.ts';
import type { CompiledEdge, CompiledNode, EdgeDocument, NodeScope } from './node-kind.ts';

/** An edge with its condition (a `{{ predicate }}`, if it has one) compiled. */
export function compileEdge(edge: EdgeDocument, scope: NodeScope): CompiledEdge {
  let when: Expression | undefined;
  if (edge.when !== undefined) {
    when = scope.templates.compileWhole(edge.when, `${scope.path}.when`);
  }
  return { from: edge.from, on: edge.on ?? 'success', when };
}

/**
 * Whether a node runs: one of its incoming edges comes from a node done in this run (or the
 * trigger), or is an error path from a node that failed, and that edge's condition, if it has one,
 * holds.
 */
export async function isActivated(
  node: CompiledNode,
  done: ReadonlySet<string>,
  failed: ReadonlySet<string>,
  bindings: Bindings,
): Promise<boolean> {
  return anyHolds(
    node.incoming.filter((edge) => (edge.on === 'error' ? failed : done).has(edge.from)),
    bindings,
  );
}

/** Whether one of `edges` may be followed: it has no condition, or its condition holds. */
export async function anyHolds(edges: readonly CompiledEdge[], bindings: Bindings): Promise<boolean> {
  for (const edge of edges) if (!edge.when || truthy(await edge.when.evaluate(bindings))) return true;
  return false;
}
