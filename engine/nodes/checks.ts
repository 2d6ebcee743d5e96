import { type FieldError, fieldErrors, type SchemaValidator } from '../model/index.ts';
import type { CompiledNode, NodeDocument, NodeKind } from './node-kind.ts';

/**
 * The nodes of `kind` in a loop's body (any graph but the flow's, `$`), each an error: for kinds
 * that act once per run, not once per item.
 */
export function inLoopErrors(
  kind: NodeKind,
  message: string,
  nodes: ReadonlyMap<string, CompiledNode>,
  documents: readonly NodeDocument[],
  at: string,
): FieldError[] {
  if (at === '$') return [];
  return documents.flatMap((node, index) =>
    nodes.get(node.id)?.kind === kind ? [{ path: `${at}.nodes[${index}].operation`, message, node: node.id }] : [],
  );
}

/**
 * A config checked against its schema where its values are known before run time. Errors at or
 * under a `{{ }}` value are left for run time, when the resolved config is validated.
 */
export function staticConfigErrors(
  validator: SchemaValidator<unknown>,
  config: object,
  dynamicPointers: Iterable<string>,
  prefix: string,
  node: string,
): FieldError[] {
  const dynamic = [...dynamicPointers];
  const isDynamic = (pointer: string) => dynamic.some((at) => pointer === at || pointer.startsWith(`${at}/`));
  return fieldErrors(
    validator.rawErrors(structuredClone(config)).filter((error) => !isDynamic(error.instancePath)),
    prefix,
  ).map((error) => ({ ...error, node }));
}
