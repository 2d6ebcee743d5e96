import type { FromSchema } from 'json-schema-to-ts';
import { later, permanent, SchemaValidator } from '../model/index.ts';
import type { Template } from '../expressions/index.ts';
import { isTerminal, runResult } from '../store/index.ts';
import { staticConfigErrors } from './checks.ts';
import type { CompiledNode, NodeCall, NodeDocument, NodeHost, NodeKind, NodeScope } from './node-kind.ts';

/** What authors write as a call node's `operation`. */
export const CALL = 'call';
/** How deep calls may nest: a flow that calls back into its caller stops here. */
export const MAX_CALL_DEPTH = 5;
/**
 * The longest a caller waits before it looks at its called run again. The called run's end wakes it;
 * a wake that comes before the caller is asleep is missed, so it also looks again after as long as
 * it has waited so far (a quick callee is seen quickly), up to this.
 */
const CALL_RECHECK_MS = 30_000;
const FIRST_RECHECK_MS = 200;

export const callConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['flow'],
  properties: {
    flow: {
      type: 'string',
      pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      description: 'The key of the flow to call (its active version), a flow of the same tenant.',
    },
    input: { description: "The called run's message body ($input.body there); {{ }} allowed." },
  },
} as const;

type CallConfig = FromSchema<typeof callConfigSchema>;

export interface CallSpec {
  flow: string;
  input: Template;
}

const configValidator = new SchemaValidator<CallConfig>(callConfigSchema, 'call config');

/**
 * A call: starts a run of another flow of the tenant with an input, and waits for its result
 * without holding a worker (the caller waits as a "later"; the called run's end wakes it). The
 * called run is started once, checkpointed as the caller's `<node>/call` step, and knows its caller
 * (`parentRunId`).
 */
export const callKind: NodeKind<CallSpec> = {
  name: CALL,
  reference: {
    title: 'Call a flow',
    description:
      'Runs another flow of the tenant (its active version) with `input` as its message body, and waits for it ' +
      "without holding a worker. Output: the called run's result, the output of the last node it ran (null when " +
      'a filter stopped it); a called run that fails (or ends handled or cancelled) fails the call, naming it. ' +
      `The called run is a run of its own, with parentRunId; GET /runs?parentRunId= lists a run's calls. Calls nest ` +
      `at most ${MAX_CALL_DEPTH} deep. A test run does not call: it shows what it would call.`,
    configSchema: callConfigSchema,
    sideEffects: true,
  },
  claims: (node) => node.operation === CALL,
  compile: compileCall,
  hasSideEffects: () => true,
  runner: (host) => ({ run: (node, call) => runCall(host, node, call) }),
};

function compileCall(node: NodeDocument, scope: NodeScope): CallSpec | undefined {
  const config = (node.config ?? {}) as Partial<CallConfig>;
  const path = `${scope.path}.config`;
  // The flow is named as is: publishing can say what it calls.
  const errors = staticConfigErrors(configValidator, config, [], path, node.id);
  scope.errors.push(...errors);
  const input = scope.templates.compile(config.input ?? null, `${path}.input`);
  return errors.length > 0 || config.flow === undefined ? undefined : { flow: config.flow, input };
}

async function runCall(host: NodeHost, node: CompiledNode<CallSpec>, call: NodeCall): Promise<unknown> {
  const { flow } = node.spec;
  const { run, sink } = host;
  if (sink.mode !== 'run') {
    sink.simulated?.(call.key);
    return { dryRun: true, wouldCall: { flow, input: (await node.spec.input.evaluate(call.scope.bindings)) ?? null } };
  }
  if (run.callDepth >= MAX_CALL_DEPTH)
    throw permanent(`calls nest more than ${MAX_CALL_DEPTH} deep: does flow ${flow} call back into its caller?`);
  const { runId, calledAt } = await host.subStep(call, node, 'call', async () => {
    const input = (await node.spec.input.evaluate(call.scope.bindings)) ?? null;
    const started = await sink.startFlow(run, flow, input, {
      deliveryId: `call:${run.id}.${call.key}`,
      called: true,
      trace: call.trace,
    });
    if (!started) throw permanent(`flow ${flow} is not active: there is nothing to call`);
    return { runId: started, calledAt: new Date().toISOString() };
  });
  const found = await host.options.store.getRun(run.tenantId, runId);
  if (!found) throw permanent(`the called run ${runId} of flow ${flow} is gone`);
  const { run: called, steps } = found;
  if (!isTerminal(called.status)) {
    // Checkpoints made before calledAt was ISO 8601 hold epoch milliseconds: Date reads both.
    const waited = Date.now() - new Date(calledAt).getTime();
    throw later(`waits for run ${runId} of flow ${flow}`, {
      retryAfterMs: Math.min(CALL_RECHECK_MS, Math.max(FIRST_RECHECK_MS, waited)),
    });
  }
  if (called.status === 'succeeded') return runResult(steps);
  if (called.status === 'filtered' || called.status === 'skipped') return null;
  throw permanent(
    `flow ${flow} ended ${called.status}${called.error ? `: ${called.error.message}` : ''} (run ${runId})`,
    {
      details: { runId },
    },
  );
}
