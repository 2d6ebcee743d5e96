import { LRUCache } from 'lru-cache';

/**
 * What Shopify will charge for a query before it is sent, reckoned from the document alone by the documented rules:
 * a scalar or enum field costs 0, an object (or a list of them) 1 plus its fields, a connection 2 plus its page size
 * (`first` or `last`) times one node of it (`nodes`), a mutation 10 per root field. A field with a selection is an
 * object and one with `first`/`last` a connection, so no schema is needed: the shop's budget reserves exactly what
 * the query asks for, whatever the page sizes, and a query it never saw is not admitted on a guess.
 */

/** Shopify refuses a query whose requested cost is over this. */
export const MAX_QUERY_COST = 1000;
const MUTATION_COST = 10;

type Selection =
  | { kind: 'field'; name: string; size?: string | number; selections?: Selection[] }
  | { kind: 'spread'; name: string }
  | { kind: 'inline'; selections: Selection[] };

interface ParsedDocument {
  operation: 'query' | 'mutation' | 'subscription';
  selections: Selection[];
  fragments: Map<string, Selection[]>;
}

// Commas and comments are insignificant in GraphQL; strings are skipped whole.
const TOKEN =
  /[\s,]+|#[^\n]*|("""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|\.\.\.|[!$&():=@[\]{|}]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[_A-Za-z]\w*)/y;

function tokens(text: string): string[] {
  const found: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(text);
    if (!match) throw new Error(`unexpected character at ${at} of the GraphQL document`);
    if (match[1] !== undefined) found.push(match[1]);
  }
  return found;
}

class Parser {
  private at = 0;
  constructor(private readonly tokens: string[]) {}

  document(): ParsedDocument {
    const fragments = new Map<string, Selection[]>();
    let operation: ParsedDocument | undefined;
    while (this.at < this.tokens.length) {
      if (this.peek() === 'fragment') {
        this.at++;
        const name = this.next();
        this.expect('on');
        this.next();
        this.directives();
        fragments.set(name, this.selectionSet());
        continue;
      }
      let kind: ParsedDocument['operation'] = 'query';
      if (this.peek() !== '{') {
        kind = this.next() as ParsedDocument['operation'];
        if (this.peek() !== '(' && this.peek() !== '{' && this.peek() !== '@') this.next();
        if (this.peek() === '(') this.skipBalanced();
        this.directives();
      }
      const selections = this.selectionSet();
      operation ??= { operation: kind, selections, fragments };
    }
    if (!operation) throw new Error('the GraphQL document holds no operation');
    return operation;
  }

  private selectionSet(): Selection[] {
    this.expect('{');
    const selections: Selection[] = [];
    while (this.peek() !== '}') selections.push(this.selection());
    this.at++;
    return selections;
  }

  private selection(): Selection {
    if (this.peek() === '...') {
      this.at++;
      if (this.peek() === 'on') {
        this.at += 2;
      } else if (this.peek() !== '{' && this.peek() !== '@') {
        const name = this.next();
        this.directives();
        return { kind: 'spread', name };
      }
      this.directives();
      return { kind: 'inline', selections: this.selectionSet() };
    }
    let name = this.next();
    if (this.peek() === ':') {
      this.at++;
      name = this.next();
    }
    let size: string | number | undefined;
    if (this.peek() === '(') size = this.pageSizeArgument();
    this.directives();
    return this.peek() === '{'
      ? { kind: 'field', name, size, selections: this.selectionSet() }
      : { kind: 'field', name, size };
  }

  /** A field's arguments, of which only `first` or `last` matters: a number, or the variable holding it. */
  private pageSizeArgument(): string | number | undefined {
    let size: string | number | undefined;
    this.expect('(');
    while (this.peek() !== ')') {
      const argument = this.next();
      this.expect(':');
      if ((argument === 'first' || argument === 'last') && this.peek() === '$') {
        this.at++;
        size = this.next();
      } else if ((argument === 'first' || argument === 'last') && /^\d+$/.test(this.peek() ?? '')) {
        size = Number(this.next());
      } else this.value();
    }
    this.at++;
    return size;
  }

  private value() {
    const token = this.peek();
    if (token === '[' || token === '{') this.skipBalanced();
    else if (token === '$') this.at += 2;
    else this.at++;
  }

  private directives() {
    while (this.peek() === '@') {
      this.at += 2;
      if (this.peek() === '(') this.skipBalanced();
    }
  }

  private skipBalanced() {
    let depth = 0;
    do {
      const token = this.next();
      if (token === '(' || token === '[' || token === '{') depth++;
      else if (token === ')' || token === ']' || token === '}') depth--;
    } while (depth > 0);
  }

  private peek(): string | undefined {
    return this.tokens[this.at];
  }

  private next(): string {
    const token = this.tokens[this.at++];
    if (token === undefined) throw new Error('the GraphQL document ends early');
    return token;
  }

  private expect(token: string) {
    const found = this.next();
    if (found !== token) throw new Error(`expected "${token}" in the GraphQL document, found "${found}"`);
  }
}

/** Documents are few and fixed (each operation's own): each is parsed once. */
const parsedDocuments = new LRUCache<string, ParsedDocument>({ max: 1000 });

function parsedDocument(document: string): ParsedDocument {
  let found = parsedDocuments.get(document);
  if (!found) {
    found = new Parser(tokens(document)).document();
    parsedDocuments.set(document, found);
  }
  return found;
}

function selectionCost(selections: Selection[], document: ParsedDocument, variables: Record<string, unknown>): number {
  let total = 0;
  for (const selection of selections) {
    if (selection.kind === 'spread')
      total += selectionCost(document.fragments.get(selection.name) ?? [], document, variables);
    else if (selection.kind === 'inline') total += selectionCost(selection.selections, document, variables);
    else if (!selection.selections) continue;
    else if (selection.size === undefined) total += 1 + selectionCost(selection.selections, document, variables);
    else {
      const size = Number(typeof selection.size === 'number' ? selection.size : (variables[selection.size] ?? 0));
      const nodes = selection.selections.find((part) => part.kind === 'field' && part.name === 'nodes');
      const node =
        nodes?.kind === 'field' && nodes.selections ? selectionCost(nodes.selections, document, variables) : 0;
      total += 2 + size * (1 + node);
    }
  }
  return total;
}

/** The points Shopify will ask of the shop's bucket for this document with these variables. */
export function requestedCost(document: string, variables: Record<string, unknown> = {}): number {
  const parsed = parsedDocument(document);
  if (parsed.operation === 'mutation') return MUTATION_COST * parsed.selections.length;
  return selectionCost(parsed.selections, parsed, variables);
}

/** The largest page (the variable `size`, at most `wanted`) that keeps the query within Shopify's limit per query. */
export function largestPage(document: string, size: string, wanted: number, variables: Record<string, unknown> = {}) {
  const empty = requestedCost(document, { ...variables, [size]: 0 });
  const perNode = requestedCost(document, { ...variables, [size]: 1 }) - empty;
  return Math.max(1, Math.min(wanted, Math.floor((MAX_QUERY_COST - empty) / perNode)));
}
