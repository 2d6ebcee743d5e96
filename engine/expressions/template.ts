import { type FieldError, jsonPath } from '../model/index.ts';
import { describeSyntaxError, DOCUMENT, Expression, type Bindings } from './expression.ts';
import { unknownFunction } from './expression-reads.ts';
import type { ExpressionSandbox } from './sandbox.ts';

/**
 * Config values may carry JSONata in `{{ }}`:
 * - a string that is exactly `{{ expr }}` becomes the expression's value, with its type;
 * - `{{ expr }}` inside a longer string is interpolated as text.
 * Templates are compiled once; a template without expressions evaluates to its constant.
 */
export interface Template {
  readonly isStatic: boolean;
  evaluate(bindings: Bindings): Promise<unknown>;
}

/**
 * Names of `$vars` / `$secrets` / `$platform` a flow reads, so a run loads only those. A tenant's
 * variables and secrets must be named (`$vars.NAME`): a run never loads all of them. The operator's
 * platform values may be read whole ('*').
 */
export interface References {
  vars: Set<string>;
  secrets: Set<string>;
  platform: Set<string> | '*';
}

const referenceKinds = ['vars', 'secrets', 'platform'] as const;

export const emptyReferences = (): References => ({ vars: new Set(), secrets: new Set(), platform: new Set() });

/** A name an expression reads (`$steps.map`, `$vars.ERP_URL`), and the field it is written in. */
export interface NameRead {
  kind: 'steps' | (typeof referenceKinds)[number];
  name: string;
  path: string;
}

const WHOLE = /^\{\{([\s\S]*)\}\}$/;
const PART = /\{\{([\s\S]*?)\}\}/g;

export class TemplateCompiler {
  readonly errors: FieldError[] = [];
  /**
   * Every string holding `{{ }}`, by its JSON pointer (relative to the compiled value): schema checks at
   * publish skip them, and a run-time failure quotes them.
   */
  readonly dynamic = new Map<string, string>();
  readonly references: References = emptyReferences();
  /** Every name read, where: the checks at publish compare them with the graph and the tenant's variables. */
  readonly reads: NameRead[] = [];

  constructor(
    private readonly sandbox: ExpressionSandbox,
    private readonly node?: string,
  ) {}

  compile(value: unknown, path: string, pointer = ''): Template {
    if (typeof value === 'string') return this.compileString(value, path, pointer);
    if (Array.isArray(value)) {
      const items = value.map((item, index) => this.compile(item, `${path}[${index}]`, `${pointer}/${index}`));
      return items.every((item) => item.isStatic) ? constant(value) : new ArrayTemplate(items);
    }
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value).map(
        ([key, item]) => [key, this.compile(item, jsonPath('', key).replace('$', path), `${pointer}/${key}`)] as const,
      );
      return entries.every(([, item]) => item.isStatic) ? constant(value) : new ObjectTemplate(entries);
    }
    return constant(value);
  }

  /** A value that must be one whole `{{ expression }}` (an edge condition, a loop's items). */
  compileWhole(source: string, path: string): Expression | undefined {
    const whole = WHOLE.exec(source.trim());
    if (!whole) {
      this.errors.push(this.error(path, 'must be a single {{ expression }}'));
      return undefined;
    }
    return this.expression(whole[1], path);
  }

  private compileString(value: string, path: string, pointer: string): Template {
    if (!value.includes('{{')) return constant(value);
    this.dynamic.set(pointer, value);
    const whole = WHOLE.exec(value);
    if (whole && !whole[1].includes('{{')) {
      const expression = this.expression(whole[1], path);
      return expression ? new ExpressionTemplate(expression) : constant(value);
    }
    const parts: Array<string | Expression> = [];
    let last = 0;
    for (const match of value.matchAll(PART)) {
      if (match.index > last) parts.push(value.slice(last, match.index));
      const expression = this.expression(match[1], path);
      if (expression) parts.push(expression);
      last = match.index + match[0].length;
    }
    if (last < value.length) parts.push(value.slice(last));
    return new InterpolationTemplate(parts);
  }

  private expression(source: string, path: string): Expression | undefined {
    if (source.trim() === '') {
      this.errors.push(this.error(path, 'has an empty {{ }} expression'));
      return undefined;
    }
    try {
      const expression = new Expression(source.trim(), this.sandbox);
      this.collectReferences(source, path);
      for (const name of expression.syntaxReads.steps) this.reads.push({ kind: 'steps', name, path });
      // A run binds `$document` (data spaces); an action's expression has JSONata's functions alone.
      for (const name of expression.syntaxReads.unknownFunctions.filter((name) => name !== DOCUMENT))
        this.errors.push(this.error(path, unknownFunction(name)));
      for (const message of expression.syntaxReads.renamed) this.errors.push(this.error(path, message));
      return expression;
    } catch (error) {
      this.errors.push(this.error(path, `expression does not compile: ${describeSyntaxError(error)}`));
      return undefined;
    }
  }

  private collectReferences(source: string, path: string) {
    for (const kind of referenceKinds) {
      const named = [...source.matchAll(new RegExp(`\\$${kind}\\.([A-Za-z_][A-Za-z0-9_]*)`, 'g'))].map((m) => m[1]);
      const dynamic = (source.match(new RegExp(`\\$${kind}(?![A-Za-z0-9_])`, 'g'))?.length ?? 0) > named.length;
      const current = this.references[kind];
      if (dynamic && kind === 'platform') this.references.platform = '*';
      else if (dynamic)
        this.errors.push(
          this.error(path, `reads $${kind} other than by name: write $${kind}.NAME (a run loads only those it names)`),
        );
      else if (current !== '*') for (const name of named) current.add(name);
      for (const name of named) this.reads.push({ kind, name, path });
    }
  }

  private error(path: string, message: string): FieldError {
    return this.node === undefined ? { path, message } : { path, message, node: this.node };
  }
}

export function mergeReferences(target: References, source: References) {
  for (const name of source.vars) target.vars.add(name);
  for (const name of source.secrets) target.secrets.add(name);
  if (target.platform === '*') return;
  if (source.platform === '*') target.platform = '*';
  else for (const name of source.platform) target.platform.add(name);
}

function constant(value: unknown): Template {
  const resolved = Promise.resolve(value);
  return { isStatic: true, evaluate: () => resolved };
}

class ExpressionTemplate implements Template {
  readonly isStatic = false;
  constructor(private readonly expression: Expression) {}
  evaluate(bindings: Bindings) {
    return this.expression.evaluate(bindings);
  }
}

class InterpolationTemplate implements Template {
  readonly isStatic = false;
  constructor(private readonly parts: Array<string | Expression>) {}
  async evaluate(bindings: Bindings) {
    let text = '';
    for (const part of this.parts) text += typeof part === 'string' ? part : asText(await part.evaluate(bindings));
    return text;
  }
}

class ArrayTemplate implements Template {
  readonly isStatic = false;
  constructor(private readonly items: Template[]) {}
  evaluate(bindings: Bindings) {
    return Promise.all(this.items.map((item) => item.evaluate(bindings)));
  }
}

class ObjectTemplate implements Template {
  readonly isStatic = false;
  constructor(private readonly entries: ReadonlyArray<readonly [string, Template]>) {}
  async evaluate(bindings: Bindings) {
    const result: Record<string, unknown> = {};
    for (const [key, template] of this.entries) {
      const value = await template.evaluate(bindings);
      if (value !== undefined) result[key] = value;
    }
    return result;
  }
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
