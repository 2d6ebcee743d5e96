// @ts-check
/**
 * One process of the expression sandbox (see ExpressionSandbox in sandbox.ts): it evaluates one
 * tenant expression at a time and answers with its JSON. Whatever an expression does here, at worst
 * this process dies or is killed; the parent and every other tenant's work go on. Plain JavaScript
 * (type-checked through JSDoc), so a replacement starts in a third of the time tsx's loader takes.
 */
import jsonata from 'jsonata';
import { LRUCache } from 'lru-cache';

/** @typedef {import('./sandbox.ts').SandboxRequest} SandboxRequest */
/** @typedef {import('./sandbox.ts').SandboxReply} SandboxReply */

/** Compiled expressions, least recently used out. @type {LRUCache<string, jsonata.Expression>} */
const compiled = new LRUCache({ max: 500 });
/**
 * JSONata's own (cooperative) timeout, on the clock: the outer bound of an evaluation. Its CPU limit, which time
 * waiting for a CPU does not count against, is the parent's to enforce from outside (it kills this process).
 */
const JSONATA_TIMEOUT = 'D1012';
/** @type {Map<number, (value: unknown) => void>} */
const lookups = new Map();
let nextLookup = 1;

/** @param {string} source @param {number} clockMs @param {number} maxDepth */
function compile(source, clockMs, maxDepth) {
  let expression = compiled.get(source);
  if (!expression) {
    expression = jsonata(source, { timeout: clockMs, stack: maxDepth, sequence: 1_000_000 });
    compiled.set(source, expression);
  }
  return expression;
}

/** @param {SandboxReply} message */
function reply(message) {
  process.send?.(message);
}

/** @param {Extract<SandboxRequest, { kind: 'evaluate' }>} request */
async function evaluate(request) {
  const { id, source, bindings, inputBody, documents, limits } = request;
  try {
    const expression = compile(source, limits.clockMs, limits.maxDepth);
    const { input } = bindings;
    // In its place: the parent sent it null, and JSONata keeps the order of keys.
    if (inputBody !== undefined) /** @type {Record<string, unknown>} */ (input).body = JSON.parse(inputBody);
    // `$document` reads the tenant's data spaces through the parent, which holds the store.
    /** @param {unknown} space @param {unknown} key */
    const document = (space, key) =>
      new Promise((resolve) => {
        const lookupId = nextLookup++;
        lookups.set(lookupId, resolve);
        reply({ kind: 'document', id, lookupId, space, key });
      });
    const value = await expression.evaluate(input, documents ? { ...bindings, document } : bindings);
    const json = JSON.stringify(value);
    if (json !== undefined && json.length > limits.maxResultBytes) {
      return reply({
        kind: 'result',
        id,
        error: { limit: 'result', message: `its result of ${json.length} characters exceeds ${limits.maxResultBytes}` },
      });
    }
    reply({ kind: 'result', id, json });
  } catch (error) {
    const { message, code } = /** @type {{ message?: string; code?: string }} */ (error);
    reply({
      kind: 'result',
      id,
      error: code === JSONATA_TIMEOUT ? { limit: 'time', message: '' } : { message: String(message ?? error) },
    });
  }
}

process.on('message', (/** @type {SandboxRequest} */ request) => {
  if (request.kind === 'evaluate') {
    void evaluate(request);
  } else {
    lookups.get(request.lookupId)?.(request.value);
    lookups.delete(request.lookupId);
  }
});
// The parent is gone: nothing more can be asked of this process.
process.on('disconnect', () => process.exit(0));
reply({ kind: 'ready' });
