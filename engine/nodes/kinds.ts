import type { OperationRegistry } from '../plugins/index.ts';
import { fanOutKind } from './fan-out.ts';
import type { NodeDocument, NodeKind } from './node-kind.ts';
import { operationKind } from './operation.ts';

/** Every kind of node, most specific first: a document node is compiled by the first that claims it. */
const NODE_KINDS: readonly NodeKind[] = [fanOutKind, operationKind];

export function kindOf(node: NodeDocument, registry: OperationRegistry): NodeKind {
  // The operation kind claims every node: find always finds.
  return NODE_KINDS.find((kind) => kind.claims(node, registry))!;
}
