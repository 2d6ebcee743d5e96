import type { FromSchema } from 'json-schema-to-ts';
import { later, permanent, SchemaValidator } from '../model/index.ts';
import type { Template } from '../expressions/index.ts';
import type { CompiledNode, NodeCall, NodeDocument, NodeHost, NodeKind, NodeScope } from './node-kind.ts';

/** What authors write as a wait node's `operation`. */
export const WAIT = 'wait';
/** The longest wait: a run waiting longer is better started by a schedule. */
export const MAX_WAIT_DAYS = 30;
const MAX_WAIT_MS = MAX_WAIT_DAYS * 86_400_000;
const DURATION = /^([1-9]\d{0,6})(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const waitConfigSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Exactly one of for and until.',
  minProperties: 1,
  maxProperties: 1,
  properties: {
    for: {
      type: 'string',
      description: `How long: "90s", "15m", "2h", "3d" (at most ${MAX_WAIT_DAYS} days), or a {{ }} giving one.`,
    },
    until: {
      type: 'string',
      description: `Until when: an ISO 8601 time with its offset (at most ${MAX_WAIT_DAYS} days ahead; a time passed does not wait), or a {{ }} giving one.`,
    },
  },
} as const;

type WaitConfig = FromSchema<typeof waitConfigSchema>;

export interface WaitSpec {
  /** Resolves to the config, `for` or `until`. */
  config: Template;
}

const configValidator = new SchemaValidator<WaitConfig>(waitConfigSchema, 'wait config');

/**
 * A wait: the run pauses for a duration or until a time, holding no worker slot (its job is delayed
 * in the queue, and a restart changes nothing). When it is due is decided once, on the first pass,
 * and checkpointed: a retry or a crash does not start the wait again.
 */
export const waitKind: NodeKind<WaitSpec> = {
  name: WAIT,
  reference: {
    title: 'Wait',
    description:
      'Pauses the run for a duration or until a time, holding no worker: the run is waiting, its job delayed in ' +
      'the queue, and it goes on after a restart as after the wait. When the wait ends is fixed on its first ' +
      `pass. At most ${MAX_WAIT_DAYS} days. Output: {"until": <ISO time>}.`,
    configSchema: waitConfigSchema,
    sideEffects: false,
  },
  claims: (node) => node.operation === WAIT,
  compile: compileWait,
  hasSideEffects: () => false,
  runner: (host) => ({ run: (node, call) => runWait(host, node, call) }),
};

function compileWait(node: NodeDocument, scope: NodeScope): WaitSpec | undefined {
  const { path, errors } = scope;
  const config = node.config ?? {};
  const before = errors.length;
  errors.push(...configValidator.errors(config, `${path}.config`).map((error) => ({ ...error, node: node.id })));
  const template = scope.templates.compile(config, `${path}.config`);
  // A value written as is is checked now; one given by an expression, when the node runs.
  if (errors.length === before && scope.templates.errors.length === 0 && template.isStatic) {
    const problem = dueProblem(config as WaitConfig, Date.now());
    if (typeof problem === 'string') errors.push({ path: `${path}.config`, message: problem, node: node.id });
  }
  return errors.length > before ? undefined : { config: template };
}

async function runWait(host: NodeHost, node: CompiledNode<WaitSpec>, call: NodeCall): Promise<{ until: string }> {
  const { until } = await host.subStep(call, node, 'due', async () => {
    const config = (await node.spec.config.evaluate(call.scope.bindings)) as WaitConfig;
    const due = dueProblem(config, Date.now());
    if (typeof due === 'string') throw permanent(due);
    return { until: new Date(due).toISOString() };
  });
  const left = Date.parse(until) - Date.now();
  if (left > 0) throw later(`waits until ${until}`, { retryAfterMs: left });
  return { until };
}

/** When a wait ends (epoch ms), or what is wrong with its config. */
function dueProblem(config: { for?: unknown; until?: unknown }, now: number): number | string {
  let due: number;
  if (config.for !== undefined) {
    const duration = typeof config.for === 'string' ? DURATION.exec(config.for) : null;
    if (!duration)
      return `for must be a duration such as "90s", "15m", "2h" or "3d": it is ${JSON.stringify(config.for)}`;
    due = now + Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS];
  } else {
    due = typeof config.until === 'string' && /[zZ]|[+-]\d\d:\d\d$/.test(config.until) ? Date.parse(config.until) : NaN;
    if (Number.isNaN(due))
      return `until must be an ISO 8601 time with its offset, such as "2026-12-01T09:00:00Z": it is ${JSON.stringify(config.until)}`;
  }
  if (due - now > MAX_WAIT_MS) return `waits more than the limit of ${MAX_WAIT_DAYS} days`;
  return due;
}
