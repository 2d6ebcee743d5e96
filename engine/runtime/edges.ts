import type { Bindings } from '../expressions/index.ts';
import { truthy } from '../expressions/index.ts';
import type { CompiledNode } from '../flow/index.ts';

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
