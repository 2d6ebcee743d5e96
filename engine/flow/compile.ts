import {
  ValidationError,
  type FieldError,
  fieldErrors,
  SchemaValidator,
  flowDocumentSchema,
  type FlowDocument,
  type ScheduleTriggerConfig,
  type WebhookTriggerConfig,
} from '../model/index.ts';
import { type OperationRegistry, type RegisteredOperation, ACTION_PREFIX } from '../plugins/index.ts';
import {
  type Expression,
  type ExpressionSandbox,
  emptyReferences,
  mergeReferences,
  TemplateCompiler,
  type References,
  type Template,
} from '../expressions/index.ts';
import { scheduleErrors, compileWebhook, type CompiledWebhook } from '../triggers/index.ts';

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
}

export interface CompiledEdge {
  from: string;
  when?: Expression;
}

export interface CompiledNode {
  id: string;
  operation: RegisteredOperation;
  config: Template;
  retry: RetryPolicy;
  timeoutMs: number;
  incoming: CompiledEdge[];
}

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

  const incoming = new Map<string, CompiledEdge[]>(doc.nodes.map((node) => [node.id, []]));
  const references = emptyReferences();
  doc.edges.forEach((edge, index) => {
    if (edge.from !== TRIGGER && !indexById.has(edge.from))
      errors.push({ path: `$.edges[${index}].from`, message: `names no node: ${edge.from}` });
    if (!indexById.has(edge.to)) errors.push({ path: `$.edges[${index}].to`, message: `names no node: ${edge.to}` });
    let when: Expression | undefined;
    if (edge.when !== undefined) {
      const compiler = new TemplateCompiler(options.sandbox);
      when = compiler.compilePredicate(edge.when, `$.edges[${index}].when`);
      errors.push(...compiler.errors);
      mergeReferences(references, compiler.references);
    }
    incoming.get(edge.to)?.push({ from: edge.from, when });
  });

  const compiledNodes = new Map<string, CompiledNode>();
  doc.nodes.forEach((node, index) => {
    const path = `$.nodes[${index}]`;
    const operation = options.registry.get(node.operation, node.operationVersion);
    if (!operation) {
      const majors = options.registry.majors(node.operation);
      errors.push(
        majors.length > 0 && node.operationVersion !== undefined
          ? {
              path: `${path}.operationVersion`,
              message: `${node.operation} has no major version ${node.operationVersion} (it has ${majors.join(', ')})`,
              node: node.id,
            }
          : { path: `${path}.operation`, message: `is not a registered operation: ${node.operation}`, node: node.id },
      );
      return;
    }
    const config = node.config ?? {};
    const compiler = new TemplateCompiler(options.sandbox, node.id);
    const template = compiler.compile(config, `${path}.config`);
    errors.push(...compiler.errors);
    mergeReferences(references, compiler.references);
    errors.push(...staticConfigErrors(operation, config, compiler.dynamicPointers, `${path}.config`, node.id));
    compiledNodes.set(node.id, {
      id: node.id,
      operation,
      config: template,
      retry: { maxAttempts: node.retry?.maxAttempts ?? 5, backoffMs: node.retry?.backoffMs ?? 1000 },
      timeoutMs: node.timeoutMs ?? options.defaultTimeoutMs,
      incoming: incoming.get(node.id) ?? [],
    });
  });

  errors.push(...fanOutErrors(doc, compiledNodes));
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

/**
 * A fan-out node's tasks start right after it, so nothing may run before it (it follows the trigger
 * directly), and one batch per run means one fan-out node per flow.
 */
function fanOutErrors(doc: FlowDocument, nodes: Map<string, CompiledNode>): FieldError[] {
  const errors: FieldError[] = [];
  let seen = false;
  doc.nodes.forEach((node, index) => {
    const compiled = nodes.get(node.id);
    if (!compiled?.operation.definition.fanOut) return;
    if (seen)
      errors.push({
        path: `$.nodes[${index}].operation`,
        message: 'a flow may have one fan-out operation',
        node: node.id,
      });
    if (compiled.incoming.some((edge) => edge.from !== TRIGGER)) {
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

/**
 * Check a node's config against its operation's schema where the value is known before run time.
 * Errors at or under a `{{ }}` value are deferred: the resolved config is validated on every run.
 */
function staticConfigErrors(
  operation: RegisteredOperation,
  config: object,
  dynamicPointers: string[],
  prefix: string,
  node: string,
): FieldError[] {
  const errors = operation.config.rawErrors(config);
  const isDynamic = (pointer: string) =>
    dynamicPointers.some((dynamic) => pointer === dynamic || pointer.startsWith(`${dynamic}/`));
  return fieldErrors(
    errors.filter((error) => !isDynamic(error.instancePath)),
    prefix,
  ).map((error) => ({ ...error, node }));
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
