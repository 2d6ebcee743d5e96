import jsonata from 'jsonata';
import { OperationError, permanent, type JsonText, unreadText } from '../model/index.ts';
import { expressionCost } from './expression-cost.ts';
import { type ExpressionReads, expressionReads } from './expression-reads.ts';
import type { ExpressionSandbox, Lookup } from './sandbox.ts';

/** The tenant whose expression is evaluated: a symbol, so that JSONata does not bind it as a variable. */
export const TENANT = Symbol('tenant');

/** The product's own function: `$document(space, key)`, a document's value from one of the tenant's data spaces. */
export const DOCUMENT = 'document';

/**
 * Every name an expression may find bound besides JSONata's own functions: `input` (the context, also `$input`), a
 * run's `steps`, `vars`, `secrets` and `platform`, `item` and `index` in a loop's body, `failure` on an error path,
 * and `document`, a data space's reader. None may be the name of a JSONata function (a test checks each against
 * the library): the binding would hide the function.
 */
export const BOUND_NAMES = [
  'input',
  'steps',
  'vars',
  'secrets',
  'platform',
  'item',
  'index',
  'failure',
  DOCUMENT,
] as const;

export type Bindings = { [name in Exclude<(typeof BOUND_NAMES)[number], typeof DOCUMENT>]?: unknown } & {
  document?: Lookup;
  [TENANT]?: string;
};

/** `$vars.ERP_URL`, `$steps.map.id`: a binding and plain field names, the commonest expressions. */
const PLAIN_PATH = /^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)$/;
/** Signals that a plain path met an array, where JSONata's sequence rules apply. */
const NEEDS_JSONATA = Symbol('needs JSONata');
/**
 * The most values (objects, arrays, strings, numbers...) an expression evaluated here may read: its
 * time is linear in them, about a microsecond each in JSONata, so this keeps an evaluation to a few
 * milliseconds of the event loop. Over it, the same expression goes to the sandbox.
 */
export const MAX_INLINE_VALUES = 4000;

/**
 * A tenant's JSONata expression, compiled once at publish time; runs never recompile. Where it is
 * evaluated follows from what it is (expression-cost.ts): a plain path is read directly, an
 * expression bounded by its input is evaluated here, and any other goes to the sandbox, where a
 * runaway one is stopped from outside.
 */
export class Expression {
  private readonly compiled?: jsonata.Expression;
  private readonly path?: { binding: string; fields: string[] };
  /**
   * Every `$name` it mentions but `$input` and `$document`: of those, the bindings given are sent to the sandbox, or
   * measured before evaluating here.
   */
  private readonly reads: readonly (typeof BOUND_NAMES)[number][];
  /** Evaluated in the sandbox whatever its input (not bounded by it). */
  private readonly unbounded: boolean;
  /** Whether it reads nothing bound but `$input` (a key over the message). */
  readonly readsInputOnly: boolean;
  /** The nodes it reads and the functions it calls that nothing defines, for the checks at publish. */
  readonly syntaxReads: ExpressionReads;

  constructor(
    readonly source: string,
    private readonly sandbox: ExpressionSandbox,
  ) {
    // Throws JSONata's syntax error (with position) for the caller to report against the field.
    const { timeoutMs, maxDepth } = sandbox.limits;
    const compiled = jsonata(source, { timeout: timeoutMs, stack: maxDepth, sequence: 1_000_000 });
    const plain = PLAIN_PATH.exec(source);
    if (plain) this.path = { binding: plain[1], fields: plain[2] === '' ? [] : plain[2].slice(1).split('.') };
    const ast = compiled.ast();
    this.syntaxReads = expressionReads(ast);
    const cost = expressionCost(ast);
    this.unbounded = !cost.inline;
    if (cost.inline) this.compiled = compiled;
    this.reads = BOUND_NAMES.filter((name) => cost.variables.has(name) && name !== 'input' && name !== DOCUMENT);
    this.readsInputOnly = this.reads.length === 0 && !cost.variables.has(DOCUMENT);
  }

  /** Evaluated in the sandbox (not bounded by its input). */
  get isolated(): boolean {
    return this.unbounded;
  }

  async evaluate(bindings: Bindings): Promise<unknown> {
    // A large body not parsed yet (parseOnRead) is parsed by the sandbox, not here.
    const largeBody = unreadText(bindings.input, 'body');
    if (this.path && !(largeBody && this.path.binding === 'input')) {
      const value = this.walk(bindings);
      if (value !== NEEDS_JSONATA) return value;
    }
    return this.unbounded || largeBody || this.readsTooMuch(bindings)
      ? this.evaluateIsolated(bindings, largeBody)
      : this.evaluateHere(bindings);
  }

  /** Whether what it would read here is over MAX_INLINE_VALUES. */
  private readsTooMuch(bindings: Bindings): boolean {
    let budget = MAX_INLINE_VALUES - valuesIn(bindings.input);
    for (const name of this.reads) {
      if (budget < 0) break;
      const bound = bindings[name];
      // Step outputs are counted one by one: the object that holds them grows as the run goes on.
      if (name === 'steps' && bound !== null && typeof bound === 'object')
        for (const output of Object.values(bound)) budget -= valuesIn(output);
      else budget -= valuesIn(bound);
    }
    return budget < 0;
  }

  /** A plain path read directly, with JSONata's result wherever no array is involved. */
  private walk(bindings: Bindings): unknown {
    let value: unknown = (bindings as Record<string, unknown>)[this.path!.binding];
    for (const field of this.path!.fields) {
      if (Array.isArray(value)) return NEEDS_JSONATA;
      if (value === null || typeof value !== 'object') return undefined;
      value = (value as Record<string, unknown>)[field];
    }
    return Array.isArray(value) ? NEEDS_JSONATA : value;
  }

  /** Sends what it reads to the sandbox; a large body not parsed yet goes as its text, for the sandbox to parse. */
  private evaluateIsolated(bindings: Bindings, largeBody?: JsonText): Promise<unknown> {
    const sent: Record<string, unknown> = { input: largeBody ? withoutBody(bindings.input as object) : bindings.input };
    for (const name of this.reads) if (bindings[name] !== undefined) sent[name] = bindings[name];
    return this.sandbox.evaluate(this.source, sent, {
      document: bindings.document,
      tenant: bindings[TENANT],
      largeBody,
    });
  }

  private async evaluateHere(bindings: Bindings): Promise<unknown> {
    const { timeoutMs } = this.sandbox.limits;
    let timer: NodeJS.Timeout | undefined;
    // JSONata's own timeout is cooperative; the race also bounds time spent waiting on `$document`.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(permanent(`expression timed out after ${timeoutMs} ms: ${this.source}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.compiled!.evaluate(bindings.input, bindings), deadline]);
    } catch (error) {
      throw expressionFailure(this.source, error);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An input's fields, its body null (in its place: JSONata keeps the order of keys), read without reading the body. */
const withoutBody = (input: object) =>
  Object.fromEntries(
    Object.keys(input).map((key) => [key, key === 'body' ? null : (input as Record<string, unknown>)[key]]),
  );

/** Values counted so far, per object (a run's input and outputs do not change once made). */
const counted = new WeakMap<object, number>();

/** How many values `value` holds, counted up to MAX_INLINE_VALUES + 1 (then no further). */
function valuesIn(value: unknown): number {
  if (value === null || typeof value !== 'object') return 1;
  const known = counted.get(value);
  if (known !== undefined) return known;
  let count = 0;
  const pending: unknown[] = [value];
  // Counted and pending together stay within the bound: a huge array is not even listed.
  while (pending.length > 0 && count <= MAX_INLINE_VALUES) {
    const item = pending.pop();
    count++;
    if (Array.isArray(item)) {
      const room = Math.min(item.length, MAX_INLINE_VALUES + 1 - count - pending.length);
      for (let index = 0; index < room; index++) pending.push(item[index]);
      if (room < item.length) pending.push(undefined);
    } else if (item !== null && typeof item === 'object') {
      for (const key in item) {
        if (count + pending.length > MAX_INLINE_VALUES) break;
        pending.push((item as Record<string, unknown>)[key]);
      }
    }
  }
  count = Math.min(count + pending.length, MAX_INLINE_VALUES + 1);
  counted.set(value, count);
  return count;
}

function expressionFailure(source: string, error: unknown) {
  if (error instanceof OperationError) return error;
  const detail =
    error && typeof error === 'object' && 'message' in error
      ? String((error as { message: unknown }).message)
      : String(error);
  // A failing expression is a fault of the flow document: retrying cannot help.
  return permanent(`expression failed: ${detail} (in ${source})`);
}

/** The JSONata error text without JSONata's internals, for validation messages. */
export function describeSyntaxError(error: unknown): string {
  if (error && typeof error === 'object' && 'message' in error) {
    const { message, position } = error as { message: string; position?: number };
    return position === undefined ? message : `${message} (at character ${position})`;
  }
  return String(error);
}

/** JSONata's `$boolean` rules, so conditions mean the same in edges, filters and expressions. */
export function truthy(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (Array.isArray(value)) return value.some(truthy);
  switch (typeof value) {
    case 'boolean':
      return value;
    case 'string':
      return value.length > 0;
    case 'number':
      // As JSONata, which refuses `1/0` as a condition or an argument (D1001).
      if (!Number.isFinite(value)) throw permanent(`a condition gave a number out of range: ${value}`);
      return value !== 0;
    case 'object':
      return Object.keys(value).length > 0;
    default:
      return false;
  }
}
