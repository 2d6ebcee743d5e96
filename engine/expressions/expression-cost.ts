/**
 * Which tenant expressions may be evaluated in this process, and which must cross into the sandbox.
 *
 * An expression stays here when its cost is bounded by the size of what it reads: field paths
 * (with literal indexes and filters that look only inside each item), literals, arithmetic,
 * comparison, string joining, object and array constructors, conditions, and a few functions that
 * are linear in their arguments (`$count`, `$string`, `$uppercase`...). Nothing in that class can
 * loop, recurse, multiply its input (ranges, `$pad`, `$join`, cross products of paths) or build a
 * structure larger than a small multiple of its input, and it is at most MAX_INLINE_NODES nodes, so
 * its work is a small multiple of the (size-limited) input. Everything else runs in the sandbox.
 */

/** The largest expression, in syntax nodes, evaluated in this process. */
export const MAX_INLINE_NODES = 64;

/** Built-in functions whose time and result are linear in their arguments. */
const LINEAR_FUNCTIONS = new Set([
  'count',
  'sum',
  'max',
  'min',
  'average',
  'string',
  'length',
  'substring',
  'substringBefore',
  'substringAfter',
  'uppercase',
  'lowercase',
  'trim',
  'contains',
  'number',
  'abs',
  'floor',
  'ceil',
  'round',
  'boolean',
  'not',
  'exists',
  'keys',
  'type',
  'now',
  'millis',
  'lookup',
  'append',
  // The product's: one read of a data space's document.
  'document',
]);

const OPERATORS = new Set(['+', '-', '*', '/', '%', '=', '!=', '<', '<=', '>', '>=', '&', 'and', 'or', 'in']);

interface AstNode {
  type: string;
  value?: unknown;
  steps?: AstNode[];
  stages?: Array<{ type: string; expr?: AstNode }>;
  group?: unknown;
  focus?: unknown;
  index?: unknown;
  tuple?: unknown;
  lhs?: AstNode | AstNode[][];
  rhs?: AstNode;
  expressions?: AstNode[];
  arguments?: AstNode[];
  procedure?: AstNode;
  condition?: AstNode;
  then?: AstNode;
  else?: AstNode;
}

export interface ExpressionCost {
  /** Bounded by its input: evaluated in this process. */
  inline: boolean;
  /** Every `$name` the expression mentions, so the sandbox is sent only the bindings it reads. */
  variables: Set<string>;
}

export function expressionCost(ast: unknown): ExpressionCost {
  const variables = new Set<string>();
  let nodes = 0;
  const bounded = (node: AstNode | undefined, allowVariables: boolean): boolean => {
    if (!node) return true;
    if (++nodes > MAX_INLINE_NODES) return false;
    switch (node.type) {
      case 'string':
      case 'number':
      case 'value':
      case 'name':
        return true;
      case 'variable':
        variables.add(String(node.value));
        // `$` is the item at hand; any other variable inside a filter would be read once per item.
        return allowVariables || node.value === '';
      case 'path':
        return node.group === undefined && node.steps!.every((step, index) => boundedStep(step, index, allowVariables));
      case 'binary':
        return (
          OPERATORS.has(String(node.value)) &&
          bounded(node.lhs as AstNode, allowVariables) &&
          bounded(node.rhs, allowVariables)
        );
      case 'unary':
        if (node.value === '-')
          return bounded(node.expressions?.[0] ?? (node as { expression?: AstNode }).expression, allowVariables);
        if (node.value === '[') return node.expressions!.every((item) => bounded(item, allowVariables));
        if (node.value === '{')
          return (node.lhs as AstNode[][]).every(
            ([key, value]) => bounded(key, allowVariables) && bounded(value, allowVariables),
          );
        return false;
      case 'condition':
        return (
          bounded(node.condition, allowVariables) &&
          bounded(node.then, allowVariables) &&
          bounded(node.else, allowVariables)
        );
      case 'block':
        return node.expressions!.every((item) => bounded(item, allowVariables));
      case 'function': {
        const name = node.procedure?.type === 'variable' ? String(node.procedure.value) : undefined;
        if (name !== undefined) variables.add(name);
        return (
          name !== undefined &&
          LINEAR_FUNCTIONS.has(name) &&
          node.arguments!.every((argument) => bounded(argument, allowVariables))
        );
      }
      default:
        return false;
    }
  };
  // After the first step a path may only name fields: a variable or a block there would be evaluated
  // once per item (a cross product). Filters look only inside each item: no variables.
  const boundedStep = (step: AstNode, index: number, allowVariables: boolean): boolean => {
    if (step.focus !== undefined || step.index !== undefined || step.tuple !== undefined || step.group !== undefined)
      return false;
    if (index > 0 && step.type !== 'name') return false;
    if (!bounded({ ...step, stages: undefined }, allowVariables)) return false;
    return (step.stages ?? []).every((stage) => stage.type === 'filter' && bounded(stage.expr, false));
  };
  const inline = bounded(ast as AstNode, true);
  // Collect every variable of an expression that is not inline too: the sandbox needs them.
  if (!inline) collectVariables(ast, variables);
  return { inline, variables };
}

function collectVariables(node: unknown, into: Set<string>) {
  if (Array.isArray(node)) {
    for (const item of node) collectVariables(item, into);
  } else if (node && typeof node === 'object') {
    const { type, value } = node as AstNode;
    if (type === 'variable' && typeof value === 'string') into.add(value);
    for (const child of Object.values(node)) if (child && typeof child === 'object') collectVariables(child, into);
  }
}
