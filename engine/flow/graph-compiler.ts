import { type FieldError, SchemaValidator, flowNodeSchema, suggestion } from '../model/index.ts';
import {
  emptyReferences,
  mergeReferences,
  type NameRead,
  TemplateCompiler,
  type ExpressionSandbox,
} from '../expressions/index.ts';
import type { OperationRegistry } from '../plugins/index.ts';
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

export interface CompileOptions {
  registry: OperationRegistry;
  /** Where expressions that could run away are evaluated. */
  sandbox: ExpressionSandbox;
  defaultTimeoutMs: number;
}

/** Where a `{{ }}` is evaluated: after `reader` (a node; with `self`, an edge from it) of the graph at `at`. */
interface ReadSite {
  at: string;
  reader: string;
  self: boolean;
  node?: string;
}

/** A graph compiled: the node (and its graph) that holds it, if any, and each node's ancestors. */
interface GraphRecord {
  owner?: { at: string; id: string };
  ancestors: Map<string, Set<string>>;
}

/** A name a `{{ }}` reads, where it is written and where it is evaluated. */
export type VariableRead = NameRead & { node?: string };

const nodeValidator = new SchemaValidator<NodeDocument>(flowNodeSchema, 'node');

/**
 * Compiles the flow's graph and the graphs inside its nodes (a loop's body): node ids unique across
 * all, each node by its kind, edges checked, the order they run in. It also gathers what their
 * expressions read: the references a run loads, the `$steps` checked against the graph, and the
 * variables the API checks against the tenant's.
 */
export class GraphCompiler {
  readonly references = emptyReferences();
  /** Every `$vars`, `$secrets` and `$platform` name read, with its field. */
  readonly variableReads: VariableRead[] = [];
  private readonly paths = new Map<string, string>();
  private readonly graphs = new Map<string, GraphRecord>();
  private readonly stepReads: Array<NameRead & ReadSite> = [];
  /** The node being compiled: the owner of a graph compiled inside it. */
  private owner?: { at: string; id: string };

  constructor(
    private readonly options: CompileOptions,
    private readonly errors: FieldError[],
  ) {}

  compile(nodes: unknown[], edges: EdgeDocument[], at: string, entry: string): CompiledGraph | undefined {
    const { errors } = this;
    const owner = this.owner;
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
      if (edge.from === entry && edge.on === 'error')
        errors.push({ path: `${path}.on`, message: `the ${entry} does not fail: an error path leaves a node` });
      if (!ids.has(edge.to)) errors.push({ path: `${path}.to`, message: `names no node here: ${edge.to}` });
      const scope = this.scope(path);
      incoming.get(edge.to)?.push(compileEdge(edge, scope));
      this.collect(scope.templates, { at, reader: edge.from, self: true });
    });

    const compiled = new Map<string, CompiledNode>();
    documents.forEach((node, index) => {
      const kind = kindOf(node, this.options.registry);
      const scope = this.scope(`${at}.nodes[${index}]`, node.id);
      this.owner = { at, id: node.id };
      const spec = kind.compile(node, scope);
      this.owner = owner;
      this.collect(scope.templates, { at, reader: node.id, self: false, node: node.id });
      if (spec === undefined) return;
      compiled.set(node.id, {
        id: node.id,
        operation: node.operation,
        kind,
        spec,
        retry: { maxAttempts: node.retry?.maxAttempts ?? 5, backoffMs: node.retry?.backoffMs ?? 1000 },
        timeoutMs: node.timeoutMs ?? this.options.defaultTimeoutMs,
        incoming: incoming.get(node.id) ?? [],
        reads: new Set(scope.templates.reads.filter((read) => read.kind === 'steps').map((read) => read.name)),
      });
    });
    for (const kind of new Set([...compiled.values()].map((node) => node.kind)))
      errors.push(...(kind.checkGraph?.(compiled, documents, at) ?? []));
    const order = graphOrder(documents, incoming, entry, at, errors);
    this.graphs.set(at, { owner, ancestors: ancestorsOf(order, incoming, entry) });
    if (errors.length > before) return undefined;
    const errorPaths = new Map<string, CompiledEdge[]>();
    for (const edge of [...incoming.values()].flat())
      if (edge.on === 'error') errorPaths.set(edge.from, [...(errorPaths.get(edge.from) ?? []), edge]);
    return { entry, nodes: order.map((id) => compiled.get(id)!), errorPaths };
  }

  /**
   * Once the whole flow is compiled without errors: each `$steps.<id>` must name a node that has run
   * when the `{{ }}` is evaluated (one upstream of it, in its graph or around its loop).
   */
  stepReadErrors(): FieldError[] {
    const errors: FieldError[] = [];
    for (const read of this.stepReads) {
      const visible = this.visible(read.at, read.reader, read.self);
      if (visible.has(read.name)) continue;
      const message = this.paths.has(read.name)
        ? `reads $steps.${read.name}, but node ${read.name} does not run before it`
        : `reads $steps.${read.name}, but the flow has no node ${read.name}${suggestion(read.name, visible, '$steps.')}`;
      errors.push(
        read.node === undefined ? { path: read.path, message } : { path: read.path, message, node: read.node },
      );
    }
    return errors;
  }

  /** The nodes whose outputs a `{{ }}` evaluated after `reader` can read. */
  private visible(at: string, reader: string, self: boolean): Set<string> {
    const graph = this.graphs.get(at)!;
    const visible = new Set(graph.ancestors.get(reader));
    if (self && graph.ancestors.has(reader)) visible.add(reader);
    if (graph.owner) for (const id of this.visible(graph.owner.at, graph.owner.id, false)) visible.add(id);
    return visible;
  }

  private scope(path: string, node?: string): NodeScope {
    return {
      path,
      registry: this.options.registry,
      errors: this.errors,
      templates: new TemplateCompiler(this.options.sandbox, node),
      compileGraph: (nodes, edges, at, entry) => this.compile(nodes, edges, at, entry),
    };
  }

  private collect(templates: TemplateCompiler, site: ReadSite) {
    this.errors.push(...templates.errors);
    mergeReferences(this.references, templates.references);
    for (const read of templates.reads) {
      if (read.kind === 'steps') this.stepReads.push({ ...read, ...site });
      else this.variableReads.push(site.node === undefined ? read : { ...read, node: site.node });
    }
  }
}

/** Each node's ancestors: the nodes that may have run before it (through any edge into it). */
function ancestorsOf(order: string[], incoming: Map<string, CompiledEdge[]>, entry: string) {
  const ancestors = new Map<string, Set<string>>();
  for (const id of order) {
    const above = new Set<string>();
    for (const { from } of incoming.get(id) ?? []) {
      if (from === entry) continue;
      above.add(from);
      for (const ancestor of ancestors.get(from) ?? []) above.add(ancestor);
    }
    ancestors.set(id, above);
  }
  return ancestors;
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
