import jsonata from 'jsonata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOUND_NAMES,
  type Bindings,
  ExpressionSandbox,
  TemplateCompiler,
  TENANT,
} from '../engine/expressions/index.ts';
import { JsonText, parseOnRead } from '../engine/model/json-text.ts';
import { anyHolds } from '../engine/nodes/index.ts';
import { ActionRunner } from '../engine/plugins/actions.ts';
import type { Store } from '../engine/store/port.ts';
import { BINDINGS, EXPRESSIONS, INPUTS } from './support/jsonata-corpus.ts';
import { storeAdapters } from './support/stores.ts';

/**
 * The product's answer to every expression of a corpus over every input, wherever the product evaluates it, beside
 * the `jsonata` library's for the same input and bindings: a node's `{{ }}` (in the process, in the sandbox over a
 * large body or past the bound of values read in the process), an edge's condition, and a tenant's action.
 */

const sandbox = new ExpressionSandbox({
  timeoutMs: 2000,
  memoryMb: 128,
  maxDepth: 300,
  maxResultBytes: 1 << 22,
  processes: 2,
});
const [, openStore] = storeAdapters('parity')[0];
let store: Store;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ store, cleanup } = await openStore());
  await store.createTenant({ id: 'parity', name: 'parity' });
});
afterAll(async () => {
  sandbox.close();
  await cleanup();
});

/** An answer as the product keeps it (JSON), or that it failed; both sides alike. */
async function answer(evaluate: () => Promise<unknown>): Promise<string> {
  try {
    const value = await evaluate();
    return value === undefined ? 'undefined' : JSON.stringify(value);
  } catch {
    return 'failed';
  }
}

const library = (source: string, input: unknown, bindings: Record<string, unknown>) =>
  answer(() => jsonata(source).evaluate(input, bindings));

/** The same message input with its body as unparsed text: the sandbox parses it. */
function withLargeBody(input: { body: unknown }) {
  const copy = { ...input };
  parseOnRead(copy, 'body', new JsonText(JSON.stringify(input.body)));
  return copy;
}

/** More values than the process evaluates (MAX_INLINE_VALUES): the expression goes to the sandbox. */
const padded = (input: object) => ({ ...input, padding: Array.from({ length: 4100 }, (_, index) => index) });

interface Difference {
  where: string;
  expression: string;
  input: string;
  jsonata: string;
  product: string;
}

describe('every expression gives the jsonata library’s answer', () => {
  it('in a node, in an edge condition and in an action, in the process and in the sandbox', async () => {
    const differences: Difference[] = [];
    const refused: string[] = [];
    let compared = 0;
    const actions = new ActionRunner(store, sandbox);
    for (const [index, source] of EXPRESSIONS.entries()) {
      const compiler = new TemplateCompiler(sandbox);
      const expression = compiler.compileWhole(`{{ ${source} }}`, '$.config');
      let actionSaved = true;
      try {
        await store.putAction('parity', {
          name: `e${index}`,
          description: null,
          expression: source,
          inputSchema: {},
          outputSchema: {},
        });
      } catch {
        actionSaved = false;
      }
      if (!expression || compiler.errors.length > 0 || !actionSaved) {
        refused.push(source);
        continue;
      }
      for (const [name, input] of INPUTS) {
        const compare = async (where: string, reference: Promise<string>, product: Promise<string>) => {
          const [jsonataAnswer, productAnswer] = await Promise.all([reference, product]);
          compared++;
          if (jsonataAnswer !== productAnswer)
            differences.push({
              where,
              expression: source,
              input: name,
              jsonata: jsonataAnswer,
              product: productAnswer,
            });
        };
        const run = (value: unknown): Bindings => ({
          input: value,
          ...BINDINGS,
          document: () => undefined,
          [TENANT]: 'parity',
        });
        if (input !== null && typeof input === 'object' && 'body' in input) {
          const reference = library(source, input, { input, ...BINDINGS });
          await compare(
            'node',
            reference,
            answer(() => expression.evaluate(run(input))),
          );
          await compare(
            'node, large body',
            reference,
            answer(() => expression.evaluate(run(withLargeBody(input)))),
          );
          const more = padded(input);
          await compare(
            'node, past the values read in the process',
            library(source, more, { input: more, ...BINDINGS }),
            answer(() => expression.evaluate(run(more))),
          );
          await compare(
            'edge condition',
            library(`$boolean(${source}) = true`, input, { input, ...BINDINGS }),
            answer(() => anyHolds([{ from: 'a', on: 'success', when: expression }], run(input))),
          );
        }
        // An action's output is null where JSONata's is undefined (JSON has no undefined).
        await compare(
          'action',
          library(source, input, { input }).then((value) => (value === 'undefined' ? 'null' : value)),
          answer(() => actions.run('parity', `e${index}`, undefined, input, '$')),
        );
      }
    }
    console.log(
      `${EXPRESSIONS.length} expressions, ${INPUTS.length} inputs: ${compared} answers compared with jsonata's, ` +
        `${differences.length} differ; refused when saved: ${refused.join(', ')}`,
    );
    expect(differences).toEqual([]);
    // Refused on purpose, when saved: a function JSONata does not have.
    expect(refused).toEqual(['$undefinedFunction(1)']);
    expect(compared).toBeGreaterThan(5000);
  });

  it('names no binding after a JSONata function', async () => {
    for (const name of BOUND_NAMES)
      expect({ name, type: await jsonata(`$type($${name})`).evaluate({}) }).toEqual({ name, type: undefined });
    // The check itself: a function's name is found.
    expect(await jsonata('$type($lookup)').evaluate({})).toBe('function');
  });
});
