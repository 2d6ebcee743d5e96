import type { FieldError } from '../model/index.ts';
import { inLoopErrors } from './checks.ts';
import type { AfterNode, CompiledNode, NodeDocument, NodeHost, NodeKind } from './node-kind.ts';
import { compileOperation, type OperationSpec, operationKind } from './operation.ts';

/**
 * An operation that fans out (`fanOut: true`, e.g. an order list import): it runs as any operation,
 * and its items become a batch of tasks, each a run of the nodes after it. The run that imported
 * the batch ends after it; a test run goes on with the first item.
 */
export const fanOutKind: NodeKind<OperationSpec> = {
  name: 'fan-out',
  claims: (node, registry) => registry.get(node.operation, node.operationVersion)?.definition.fanOut === true,
  compile: compileOperation,
  checkGraph: fanOutErrors,
  hasSideEffects: operationKind.hasSideEffects,
  runner: (host) => {
    const step = operationKind.runner(host);
    return {
      run: (node, call) => step.run(node, call),
      after: (node) => afterFanOut(host, node),
    };
  },
};

function afterFanOut(host: NodeHost, node: CompiledNode<OperationSpec>): AfterNode {
  // Inside one of the batch's tasks the fan-out node's output is already the task's item.
  if (host.run.batchId) return 'next';
  const item = host.sink.fanOutItem();
  if (item === undefined) return 'end';
  // As in a task: the item is the fan-out node's output and the message's body.
  host.outputs[node.id] = item;
  host.input.body = item;
  return 'next';
}

/**
 * A fan-out node's tasks start right after it, so nothing may run before it (it follows the trigger
 * directly, not inside a loop), and one batch per run means one fan-out node per flow.
 */
function fanOutErrors(
  nodes: ReadonlyMap<string, CompiledNode>,
  documents: readonly NodeDocument[],
  at: string,
): FieldError[] {
  if (at !== '$')
    return inLoopErrors(
      fanOutKind,
      'a fan-out operation runs only at the top of a flow, not in a loop',
      nodes,
      documents,
      at,
    );
  const errors: FieldError[] = [];
  let seen = false;
  documents.forEach((node, index) => {
    const compiled = nodes.get(node.id);
    if (compiled?.kind !== fanOutKind) return;
    if (seen)
      errors.push({
        path: `$.nodes[${index}].operation`,
        message: 'a flow may have one fan-out operation',
        node: node.id,
      });
    if (compiled.incoming.some((edge) => edge.from !== 'trigger')) {
      errors.push({
        path: `$.nodes[${index}]`,
        message: `${node.operation} fans out: it must follow the trigger directly`,
        node: node.id,
      });
    }
    seen = true;
  });
  return errors;
}
