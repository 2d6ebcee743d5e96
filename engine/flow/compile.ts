import {
  ValidationError,
  type FieldError,
  SchemaValidator,
  flowDocumentSchema,
  flowNodeSchema,
  type FlowDocument,
  type ScheduleTriggerConfig,
  type WebhookTriggerConfig,
} from '../model/index.ts';
import { type OperationRegistry, ACTION_PREFIX } from '../plugins/index.ts';
import { type ExpressionSandbox, emptyReferences, type References } from '../expressions/index.ts';
import { scheduleErrors, compileWebhook, type CompiledWebhook } from '../triggers/index.ts';
import {
  type CompiledEdge,
  type CompiledGraph,
  type CompiledNode,
  compileEdge,
  type EdgeDocument,
  kindOf,
  type NodeDocument,
  type NodeScope,
} from '../nodes/index.ts';

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

  const compiler = new GraphCompiler(options, errors);
  const graph = compiler.compile(doc.nodes, doc.edges, '$', TRIGGER);
  if (errors.length > 0 || !trigger || !graph) return { errors };
  return { errors, flow: { key: doc.key, trigger, nodes: graph.nodes, references: compiler.references } };
}

const nodeValidator = new SchemaValidator<NodeDocument>(flowNodeSchema, 'node');

/** Compiles the flow's graph and the graphs inside its nodes (a loop's body), node ids unique across all. */
class GraphCompiler {
  readonly references = emptyReferences();
  private readonly paths = new Map<string, string>();

  constructor(
    private readonly options: CompileOptions,
    private readonly errors: FieldError[],
  ) {}

  compile(nodes: unknown[], edges: EdgeDocument[], at: string, entry: string): CompiledGraph | undefined {
    const { errors } = this;
    const before = errors.length;
    // The flow's nodes were checked with the document; a body's are checked here.
    const documents = nodes.filter((node, index) => {
      if (at === '$') return true;
      const found = nodeValidator.errors(node, `${at}.nodes[${index}]`);
      errors.push(...found);
      return found.length === 0;
    }) as NodeDocument[];
    if (errors.length > before) return undefined;
    const ids = new Set<string>();
    documents.forEach((node, index) => {
      const path = `${at}.nodes[${index}]`;
      const earlier = this.paths.get(node.id);
      if (earlier !== undefined || node.id === entry)
        errors.push({
          path: `${path}.id`,
          message: earlier === undefined ? `"${entry}" is reserved here` : `duplicates the id of ${earlier}`,
          node: node.id,
        });
      else this.paths.set(node.id, path);
      ids.add(node.id);
    });

    const incoming = new Map<string, CompiledEdge[]>(documents.map((node) => [node.id, []]));
    edges.forEach((edge, index) => {
      const path = `${at}.edges[${index}]`;
      if (edge.from !== entry && !ids.has(edge.from))
        errors.push({ path: `${path}.from`, message: `names no node here: ${edge.from}` });
      if (!ids.has(edge.to)) errors.push({ path: `${path}.to`, message: `names no node here: ${edge.to}` });
      incoming.get(edge.to)?.push(compileEdge(edge, this.scope(path)));
    });

    const compiled = new Map<string, CompiledNode>();
    documents.forEach((node, index) => {
      const kind = kindOf(node, this.options.registry);
      const spec = kind.compile(node, this.scope(`${at}.nodes[${index}]`));
      if (spec === undefined) return;
      compiled.set(node.id, {
        id: node.id,
        kind,
        spec,
        retry: { maxAttempts: node.retry?.maxAttempts ?? 5, backoffMs: node.retry?.backoffMs ?? 1000 },
        timeoutMs: node.timeoutMs ?? this.options.defaultTimeoutMs,
        incoming: incoming.get(node.id) ?? [],
      });
    });
    for (const kind of new Set([...compiled.values()].map((node) => node.kind)))
      errors.push(...(kind.checkGraph?.(compiled, documents, at) ?? []));
    const order = graphOrder(documents, incoming, entry, at, errors);
    if (errors.length > before) return undefined;
    return { entry, nodes: order.map((id) => compiled.get(id)!) };
  }

  private scope(path: string): NodeScope {
    return {
      path,
      registry: this.options.registry,
      sandbox: this.options.sandbox,
      errors: this.errors,
      references: this.references,
      compileGraph: (nodes, edges, at, entry) => this.compile(nodes, edges, at, entry),
    };
  }
}

/** Topological order (document order among peers); reports cycles and nodes the trigger cannot reach. */
function graphOrder(
  nodes: NodeDocument[],
  incoming: Map<string, CompiledEdge[]>,
  entry: string,
  at: string,
  errors: FieldError[],
): string[] {
  const outgoing = new Map<string, string[]>([
    [entry, []],
    ...nodes.map((node) => [node.id, []] as [string, string[]]),
  ]);
  for (const [to, edges] of incoming) for (const edge of edges) outgoing.get(edge.from)?.push(to);

  const reachable = new Set<string>([entry]);
  const stack = [entry];
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
  const ready = [entry];
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

  nodes.forEach((node, index) => {
    if (!reachable.has(node.id))
      errors.push({ path: `${at}.nodes[${index}]`, message: `is not reachable from the ${entry}`, node: node.id });
    else if (!order.includes(node.id))
      errors.push({ path: `${at}.nodes[${index}]`, message: 'is part of a cycle', node: node.id });
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
