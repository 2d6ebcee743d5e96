import type { FromSchema } from 'json-schema-to-ts';
import { type ErrorRecord, later, permanent, SchemaValidator } from '../model/index.ts';
import { inLoopErrors } from './checks.ts';
import type { Expression } from '../expressions/index.ts';
import type {
  CompiledGraph,
  CompiledNode,
  EdgeDocument,
  GraphOutcome,
  NodeCall,
  NodeDocument,
  NodeHost,
  NodeKind,
  NodeScope,
} from './node-kind.ts';

/** What authors write as a loop node's `operation`. */
export const LOOP = 'loop';
/** Most items one loop node runs in a run: each item's steps are checkpoints of the run. */
export const MAX_LOOP_ITEMS = 10_000;
/** Longest item key (`key`), which becomes part of step keys and idempotency keys. */
const MAX_KEY_LENGTH = 100;
/** Where the item enters a loop's body: body edges start from it. */
const ITEM = 'item';

export const loopConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    items: {
      type: 'string',
      description: `A {{ expression }} giving the list to loop over, of at most ${MAX_LOOP_ITEMS} items.`,
    },
    key: {
      type: 'string',
      description:
        'A {{ expression }} of $item (and $index) naming an item, unique in the list and at most 100 characters. ' +
        "Its steps' checkpoints and idempotency keys carry it instead of the item's index.",
    },
    concurrency: { type: 'integer', minimum: 1, maximum: 20, default: 4, description: 'Items run at once.' },
    onItemFailure: {
      enum: ['stop', 'continue'],
      default: 'stop',
      description:
        'stop: an item that fails (and no error path in its body takes the failure) fails the loop node (items ' +
        'already started finish first); continue: every item runs, and those that failed are listed in the output. ' +
        'Either way an item that failed makes the run end handled, not succeeded.',
    },
  },
} as const;

type LoopConfig = FromSchema<typeof loopConfigSchema>;

export interface LoopSpec {
  items: Expression;
  key?: Expression;
  concurrency: number;
  onItemFailure: 'stop' | 'continue';
  body: CompiledGraph;
}

/**
 * What a loop node outputs: each item's result in order (its body's last output), and the items in which a node
 * failed for good: `handled` when an error path in the body took the failure (the result is that path's output).
 */
export interface LoopOutput {
  results: unknown[];
  failed: Array<{ index: number; key?: string; error: ErrorRecord; handled: boolean }>;
}

const configValidator = new SchemaValidator<LoopConfig>(loopConfigSchema, 'loop config');

/**
 * A loop: runs its body (a graph of its own, entered from `item`) once per item of a list, a few
 * items at once. Each item's steps are checkpointed under the item's index or key, so a retry or a
 * crash repeats no item's completed step, and each side effect has an idempotency key of its own.
 */
export const loopKind: NodeKind<LoopSpec> = {
  name: LOOP,
  reference: {
    title: 'Loop over items',
    description:
      'Runs its body (the node\'s own "nodes" and "edges", entered from "item") once per item of a list, a few ' +
      'items at once. In the body, $item is the item and $index its place; $steps holds the outputs of the nodes ' +
      "before the loop and of the item's own. Each item's steps are checkpointed under the loop's id and the " +
      "item's index (or key): a retry or a crash repeats no completed step, and each side effect carries its own " +
      'idempotency key, <message>.<loop>[<index or key>].<node>. An item that waits for a retry does not hold up the ' +
      'others. Output: {"results": [...], "failed": [...]}: each item\'s result in order (its body\'s last output; ' +
      'null where it failed or a filter stopped it) and the items in which a node failed, with the error and ' +
      '"handled" (an error path in the body took it). A run with a failed item ends handled. At most ' +
      `${MAX_LOOP_ITEMS} items; a loop cannot be inside a loop, nor a fan-out operation.`,
    configSchema: loopConfigSchema,
    sideEffects: false,
  },
  claims: (node) => node.operation === LOOP,
  compile: compileLoop,
  checkGraph: nestedLoops,
  // Its body's side effects are checkpointed as they happen; the loop's own output can wait.
  hasSideEffects: () => false,
  handledIn: (output) => {
    const { failed } = output as LoopOutput;
    return failed.length > 0 ? { first: failed[0].error, count: failed.length } : undefined;
  },
  runner: (host) => ({ run: (node, call) => runLoop(host, node, call) }),
};

function compileLoop(node: NodeDocument, scope: NodeScope): LoopSpec | undefined {
  const { path, errors } = scope;
  const before = errors.length;
  const config = structuredClone(node.config ?? {});
  errors.push(...configValidator.errors(config, `${path}.config`).map((error) => ({ ...error, node: node.id })));
  if (!node.nodes) errors.push({ path, message: 'a loop needs nodes: its body, run once per item', node: node.id });
  if (errors.length > before || !node.nodes) return undefined;
  const { items, key, concurrency, onItemFailure } = config as LoopConfig;

  const itemsExpression = scope.templates.compileWhole(items, `${path}.config.items`);
  const keyExpression = key === undefined ? undefined : scope.templates.compileWhole(key, `${path}.config.key`);
  const body = scope.compileGraph(node.nodes, node.edges ?? chain(node.nodes), path, ITEM);
  if (!itemsExpression || (key !== undefined && !keyExpression) || !body) return undefined;
  return {
    items: itemsExpression,
    key: keyExpression,
    concurrency: concurrency ?? 4,
    onItemFailure: onItemFailure ?? 'stop',
    body,
  };
}

/** Without edges, a body's nodes run one after another, in the order written. */
function chain(nodes: unknown[]): EdgeDocument[] {
  const ids = nodes.map((node) => String((node as { id?: unknown }).id));
  return ids.map((id, index) => ({ from: index === 0 ? ITEM : ids[index - 1], to: id }));
}

/** Loops multiply: a loop inside a loop would run up to MAX_LOOP_ITEMS² items in one run. */
function nestedLoops(nodes: ReadonlyMap<string, CompiledNode>, documents: readonly NodeDocument[], at: string) {
  return inLoopErrors(loopKind, 'a loop cannot be inside a loop', nodes, documents, at);
}

async function runLoop(host: NodeHost, node: CompiledNode<LoopSpec>, call: NodeCall): Promise<LoopOutput> {
  const { spec } = node;
  const { bindings, outputs } = call.scope;
  const items = await spec.items.evaluate(bindings);
  if (!Array.isArray(items))
    throw permanent(`items must be a list: {{ ${spec.items.source} }} gave ${describe(items)}`);
  if (items.length > MAX_LOOP_ITEMS)
    throw permanent(`items has ${items.length} items, over the limit of ${MAX_LOOP_ITEMS} per loop`);
  const keys = spec.key ? await itemKeys(spec.key, items, call) : undefined;

  const output: LoopOutput = { results: new Array(items.length).fill(null), failed: [] };
  const waits: Array<Extract<GraphOutcome, { kind: 'wait' }>> = [];
  const failedItem = (index: number, error: ErrorRecord, handled: boolean) =>
    output.failed.push(keys ? { index, key: keys[index], error, handled } : { index, error, handled });
  const stopped = () => spec.onItemFailure === 'stop' && output.failed.some((item) => !item.handled);
  // The results are the loop's output: once they are on course to outgrow what a node may store, no more items
  // start (their side effects would be made for a loop that cannot succeed).
  const results = new ResultsSize(host.options.maxOutputBytes, items.length);
  let next = 0;
  const worker = async () => {
    // In `stop`, an item that fails (no error path taking it) starts no more items; those running finish.
    while (next < items.length && !stopped() && !results.outgrown) {
      const index = next++;
      const itemOutputs = { ...outputs };
      const outcome = await host.runGraph(spec.body, {
        prefix: `${call.key}[${keys?.[index] ?? index}].`,
        outputs: itemOutputs,
        bindings: { ...bindings, steps: itemOutputs, item: items[index], index },
        trace: call.trace,
      });
      if (outcome.kind === 'done') {
        output.results[index] = outcome.last ?? null;
        results.add(output.results[index]);
        if (outcome.handled) failedItem(index, outcome.handled.first, true);
      } else if (outcome.kind === 'failed') failedItem(index, outcome.error, false);
      else if (outcome.kind === 'wait') waits.push(outcome);
      // A filter that stops an item leaves its result null.
    }
  };
  await Promise.all(Array.from({ length: Math.min(spec.concurrency, items.length) }, worker));

  output.failed.sort((a, b) => a.index - b.index);
  if (results.outgrown) throw permanent(results.outgrown);
  const first = output.failed.find((item) => !item.handled);
  if (first && spec.onItemFailure === 'stop')
    throw permanent(`item ${first.key ?? first.index} failed at node ${first.error.node}: ${first.error.message}`, {
      details: { failed: output.failed },
    });
  if (waits.length > 0) {
    // The loop waits for its soonest item; the next pass goes on from every item's checkpoints.
    const soonest = waits.reduce((a, b) => (b.delayMs < a.delayMs ? b : a));
    throw later(`${waits.length} of ${items.length} items wait: ${soonest.error.message}`, {
      retryAfterMs: soonest.delayMs,
    });
  }
  return output;
}

/** The size of a loop's results as its items finish, and whether they are on course to outgrow its output. */
class ResultsSize {
  private bytes = 0;
  private counted = 0;
  outgrown?: string;

  constructor(
    private readonly limit: number,
    private readonly items: number,
  ) {}

  add(result: unknown) {
    this.bytes += Buffer.byteLength(JSON.stringify(result)) + 1;
    this.counted++;
    const projected = Math.round((this.bytes / this.counted) * this.items);
    if (projected > this.limit)
      this.outgrown ??=
        `its results are on course to about ${projected} bytes for ${this.items} items, over the ${this.limit} ` +
        `bytes a node may store (MAX_STEP_OUTPUT_BYTES): it started no more items after ` +
        `${this.counted === 1 ? 'the first result' : `${this.counted} results`}. End the loop's ` +
        'body with a node that returns only what later nodes need (a transform of the answer), or send fewer items';
  }
}

/** Each item's key, checked: text or a number, unique in the list, short enough for a step key. */
async function itemKeys(key: Expression, items: unknown[], call: NodeCall): Promise<string[]> {
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const [index, item] of items.entries()) {
    const value = await key.evaluate({ ...call.scope.bindings, item, index });
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || text.length === 0 || text.length > MAX_KEY_LENGTH)
      throw permanent(
        `key of item ${index} must be text of 1-${MAX_KEY_LENGTH} characters or a number: it is ${describe(value)}`,
      );
    if (seen.has(text)) throw permanent(`key of item ${index} repeats an earlier item's: ${text}`);
    seen.add(text);
    keys.push(text);
  }
  return keys;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === 'string') return `text of ${value.length} characters`;
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
