import {
  ValidationError,
  type FieldError,
  SchemaValidator,
  flowDocumentSchema,
  type FlowDocument,
  type ScheduleTriggerConfig,
  type WebhookTriggerConfig,
} from '../model/index.ts';
import { type OperationRegistry, ACTION_PREFIX } from '../plugins/index.ts';
import { type ExpressionSandbox, emptyReferences, type References } from '../expressions/index.ts';
import { scheduleErrors, compileWebhook, type CompiledWebhook } from '../triggers/index.ts';
import { type CompiledEdge, type CompiledNode, compileEdge, kindOf, type NodeScope } from '../nodes/index.ts';

export type CompiledTrigger =
  | { type: 'webhook'; config: WebhookTriggerConfig; webhook: CompiledWebhook }
  | { type: 'schedule'; config: ScheduleTriggerConfig };

/** A validated flow version, ready to run: nodes in graph order, every expression compiled. */
export interface CompiledFlow {
  key: string;
  trigger: CompiledTrigger;
  nodes: CompiledNode[];
  references: References;
}

export interface CompileOptions {
  registry: OperationRegistry;
  /** Where expressions that could run away are evaluated. */
  sandbox: ExpressionSandbox;
  defaultTimeoutMs: number;
}

const documentValidator = new SchemaValidator<FlowDocument>(flowDocumentSchema, 'flow document');
const TRIGGER = 'trigger';

/** Every problem of a flow document, each naming its node and field. Empty when it can be published. */
export function validateFlow(document: unknown, options: CompileOptions): FieldError[] {
  return analyse(document, options).errors;
}

/** Compile a flow document or throw a ValidationError listing every problem. */
export function compileFlow(document: unknown, options: CompileOptions): CompiledFlow {
  const { errors, flow } = analyse(document, options);
  if (!flow) throw new ValidationError('The flow document is not valid', errors);
  return flow;
}

function analyse(input: unknown, options: CompileOptions): { errors: FieldError[]; flow?: CompiledFlow } {
  // Validation fills defaults in place: work on a copy so the caller's document stays as written.
  const document = structuredClone(input);
  const schemaErrors = documentValidator.errors(document);
  if (schemaErrors.length > 0) return { errors: schemaErrors };
  const doc = document as FlowDocument;
  const errors: FieldError[] = [];
  const indexById = new Map<string, number>();
  let trigger: CompiledTrigger | undefined;
  if (doc.trigger.type === 'schedule') {
    trigger = { type: 'schedule', config: doc.trigger.config as ScheduleTriggerConfig };
    errors.push(...scheduleErrors(trigger.config, '$.trigger.config'));
  } else {
    const config = (doc.trigger.config ?? {}) as WebhookTriggerConfig;
    const compiled = compileWebhook(config, (type) => options.registry.signature(type), '$.trigger.config');
    errors.push(...compiled.errors);
    if (compiled.webhook) trigger = { type: 'webhook', config, webhook: compiled.webhook };
  }

  doc.nodes.forEach((node, index) => {
    if (indexById.has(node.id))
      errors.push({
        path: `$.nodes[${index}].id`,
        message: `duplicates the id of node ${indexById.get(node.id)}`,
        node: node.id,
      });
    else indexById.set(node.id, index);
  });

  const references = emptyReferences();
  const scope = (path: string): NodeScope => ({
    path,
    registry: options.registry,
    sandbox: options.sandbox,
    errors,
    references,
  });
  const incoming = new Map<string, CompiledEdge[]>(doc.nodes.map((node) => [node.id, []]));
  doc.edges.forEach((edge, index) => {
    const path = `$.edges[${index}]`;
    if (edge.from !== TRIGGER && !indexById.has(edge.from))
      errors.push({ path: `${path}.from`, message: `names no node: ${edge.from}` });
    if (!indexById.has(edge.to)) errors.push({ path: `${path}.to`, message: `names no node: ${edge.to}` });
    incoming.get(edge.to)?.push(compileEdge(edge, scope(path)));
  });

  const compiledNodes = new Map<string, CompiledNode>();
  doc.nodes.forEach((node, index) => {
    const kind = kindOf(node, options.registry);
    const spec = kind.compile(node, scope(`$.nodes[${index}]`));
    if (spec === undefined) return;
    compiledNodes.set(node.id, {
      id: node.id,
      kind,
      spec,
      retry: { maxAttempts: node.retry?.maxAttempts ?? 5, backoffMs: node.retry?.backoffMs ?? 1000 },
      timeoutMs: node.timeoutMs ?? options.defaultTimeoutMs,
      incoming: incoming.get(node.id) ?? [],
    });
  });
  const kinds = new Set([...compiledNodes.values()].map((node) => node.kind));
  for (const kind of kinds) errors.push(...(kind.checkFlow?.(compiledNodes, doc) ?? []));
  const order = graphOrder(doc, incoming, errors);
  if (errors.length > 0 || !trigger) return { errors };
  return {
    errors,
    flow: {
      key: doc.key,
      trigger,
      nodes: order.map((id) => compiledNodes.get(id)!),
      references,
    },
  };
}

/** Topological order (document order among peers); reports cycles and nodes the trigger cannot reach. */
function graphOrder(doc: FlowDocument, incoming: Map<string, CompiledEdge[]>, errors: FieldError[]): string[] {
  const outgoing = new Map<string, string[]>([
    [TRIGGER, []],
    ...doc.nodes.map((node) => [node.id, []] as [string, string[]]),
  ]);
  for (const [to, edges] of incoming) for (const edge of edges) outgoing.get(edge.from)?.push(to);

  const reachable = new Set<string>([TRIGGER]);
  const stack = [TRIGGER];
  while (stack.length > 0) {
    for (const next of outgoing.get(stack.pop()!) ?? []) {
      if (reachable.has(next)) continue;
      reachable.add(next);
      stack.push(next);
    }
  }

  // Only edges from reachable nodes can ever fire; an unreachable node is reported once, not as a cycle downstream.
  const pending = new Map<string, number>();
  for (const [to, edges] of incoming) pending.set(to, edges.filter((edge) => reachable.has(edge.from)).length);

  const order: string[] = [];
  const ready = [TRIGGER];
  while (ready.length > 0) {
    for (const next of outgoing.get(ready.shift()!) ?? []) {
      const left = pending.get(next)! - 1;
      pending.set(next, left);
      if (left === 0) {
        order.push(next);
        ready.push(next);
      }
    }
  }

  doc.nodes.forEach((node, index) => {
    if (!reachable.has(node.id))
      errors.push({ path: `$.nodes[${index}]`, message: 'is not reachable from the trigger', node: node.id });
    else if (!order.includes(node.id))
      errors.push({ path: `$.nodes[${index}]`, message: 'is part of a cycle', node: node.id });
  });
  return order;
}

/**
 * The document as it is published: every node of a registered operation names the major version it
 * runs (the newest where the draft names none), so that registering a breaking major later changes
 * no published flow.
 */
export function pinOperationVersions(document: FlowDocument, registry: OperationRegistry): FlowDocument {
  return {
    ...document,
    nodes: document.nodes.map((node) => {
      if (node.operationVersion !== undefined || node.operation.startsWith(ACTION_PREFIX)) return node;
      const newest = registry.majors(node.operation).at(-1);
      return newest === undefined ? node : { ...node, operationVersion: newest };
    }),
  };
}
