import { suggestion } from '../model/index.ts';

/**
 * What an expression reads and calls, known from its syntax alone: the checks at publish use it to
 * catch a `$steps` of a node that has not run and a function JSONata does not have.
 */

/** JSONata's built-in functions (a test checks each against the library). */
export const JSONATA_FUNCTIONS = [
  'sum',
  'count',
  'max',
  'min',
  'average',
  'string',
  'substring',
  'substringBefore',
  'substringAfter',
  'lowercase',
  'uppercase',
  'length',
  'trim',
  'pad',
  'match',
  'contains',
  'replace',
  'split',
  'join',
  'formatNumber',
  'formatBase',
  'formatInteger',
  'parseInteger',
  'number',
  'floor',
  'ceil',
  'round',
  'abs',
  'sqrt',
  'power',
  'random',
  'boolean',
  'not',
  'map',
  'zip',
  'filter',
  'single',
  'reduce',
  'sift',
  'keys',
  'lookup',
  'append',
  'exists',
  'spread',
  'merge',
  'reverse',
  'each',
  'error',
  'assert',
  'type',
  'sort',
  'shuffle',
  'distinct',
  'base64encode',
  'base64decode',
  'encodeUrlComponent',
  'encodeUrl',
  'decodeUrlComponent',
  'decodeUrl',
  'eval',
  'toMillis',
  'fromMillis',
  'clone',
  'now',
  'millis',
] as const;
const KNOWN_FUNCTIONS = new Set<string>(JSONATA_FUNCTIONS);

/** The fault of calling `$name`, which JSONata does not have, with the function meant when one is close. */
export const unknownFunction = (name: string) =>
  `calls $${name}, which JSONata does not have${suggestion(name, JSONATA_FUNCTIONS, '$')}`;

export interface ExpressionReads {
  /** Nodes whose output it reads by name (`$steps.<name>`). */
  steps: Set<string>;
  /** Functions it calls that JSONata does not have and the expression does not define. */
  unknownFunctions: string[];
  /**
   * JSONata's functions used as the names a run once bound in their place (migration 23): `$error` read as the
   * failure, `$lookup` given a data space's name. What to write instead, for the checks at publish.
   */
  renamed: string[];
}

/** What a run called `$error` and `$lookup` before they were JSONata's again. */
export const RENAMED = {
  error:
    "$error is JSONata's function ($error(message) fails the expression): on an error path, the failure is $failure",
  lookup: "$lookup is JSONata's ($lookup(object, key)): a data space's document is $document(space, key)",
} as const;

interface SyntaxNode {
  type?: string;
  value?: unknown;
  steps?: SyntaxNode[];
  procedure?: SyntaxNode;
  lhs?: SyntaxNode;
  arguments?: SyntaxNode[];
}

export function expressionReads(ast: unknown): ExpressionReads {
  const steps = new Set<string>();
  const called = new Set<string>();
  const bound = new Set<string>();
  const callees = new Set<SyntaxNode>();
  const renamed = new Set<keyof typeof RENAMED>();
  const visit = (node: unknown) => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const { type, steps: path, procedure, lhs, value } = node as SyntaxNode;
    if (type === 'path' && path?.[0]?.type === 'variable' && path[0].value === 'steps' && path[1]?.type === 'name')
      steps.add(String(path[1].value));
    if (type === 'function' && procedure?.type === 'variable') {
      called.add(String(procedure.value));
      callees.add(procedure);
      if (procedure.value === 'lookup' && (node as SyntaxNode).arguments?.[0]?.type === 'string') renamed.add('lookup');
    }
    if (type === 'variable' && value === 'error' && !callees.has(node as SyntaxNode)) renamed.add('error');
    if (type === 'bind' && lhs?.type === 'variable') bound.add(String(lhs.value));
    if (type === 'lambda')
      for (const argument of (node as SyntaxNode).arguments ?? []) bound.add(String(argument.value));
    for (const child of Object.values(node)) if (child && typeof child === 'object') visit(child);
  };
  visit(ast);
  const unknownFunctions = [...called].filter((name) => !KNOWN_FUNCTIONS.has(name) && !bound.has(name));
  return {
    steps,
    unknownFunctions,
    renamed: [...renamed].filter((name) => !bound.has(name)).map((name) => RENAMED[name]),
  };
}
