import type { OperationRegistry } from '../plugins/index.ts';
import { callKind } from './call.ts';
import { fanOutKind } from './fan-out.ts';
import { loopKind } from './loop.ts';
import type { NodeDocument, NodeKind, NodeKindReference } from './node-kind.ts';
import { operationKind } from './operation.ts';
import { replyKind } from './reply.ts';
import { waitKind } from './wait.ts';

/** Every kind of node, most specific first: a document node is compiled by the first that claims it. */
const NODE_KINDS: readonly NodeKind[] = [loopKind, waitKind, replyKind, callKind, fanOutKind, operationKind];

export function kindOf(node: NodeDocument, registry: OperationRegistry): NodeKind {
  // The operation kind claims every node: find always finds.
  return NODE_KINDS.find((kind) => kind.claims(node, registry))!;
}

/** The kinds authors name in a node's `operation` besides registered operations, for the API reference. */
export function namedKinds(): Array<NodeKindReference & { name: string }> {
  return NODE_KINDS.flatMap((kind) => (kind.reference ? [{ name: kind.name, ...kind.reference }] : []));
}
