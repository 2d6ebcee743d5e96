import { type Bindings, type Expression, truthy } from '../expressions/index.ts';
import type { CompiledEdge, CompiledNode, EdgeDocument, NodeScope } from './node-kind.ts';

/** An edge with its condition (a `{{ predicate }}`, if it has one) compiled. */
export function compileEdge(edge: EdgeDocument, scope: NodeScope): CompiledEdge {
  let when: Expression | undefined;
  if (edge.when !== undefined) {
    when = scope.templates.compileWhole(edge.when, `${scope.path}.when`);
  }
  return { from: edge.from, when };
}

/**
 * Whether a node runs: one of its incoming edges comes from a node done in this run (or the
 * trigger), and that edge's condition, if it has one, holds.
 */
export async function isActivated(node: CompiledNode, done: Set<string>, bindings: Bindings): Promise<boolean> {
  for (const edge of node.incoming) {
    if (!done.has(edge.from)) continue;
    if (!edge.when || truthy(await edge.when.evaluate(bindings))) return true;
  }
  return false;
}
