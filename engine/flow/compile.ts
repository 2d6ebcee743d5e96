import {
  ValidationError,
  type FieldError,
  SchemaValidator,
  flowDocumentSchema,
  type FlowDocument,
  type ScheduleTriggerConfig,
  type WebhookTriggerConfig,
} from '../model/index.ts';
import { type OperationRegistry, ACTION_PREFIX } from '../plugins/index.ts';
import type { References } from '../expressions/index.ts';
import { scheduleErrors, compileWebhook, type CompiledWebhook } from '../triggers/index.ts';
import type { CompiledGraph } from '../nodes/index.ts';
import { type CompileOptions, GraphCompiler, type VariableRead } from './graph-compiler.ts';
import { type CompiledFlowControl, compileFlowControl } from './flow-control.ts';

export type CompiledTrigger =
  | { type: 'webhook'; config: WebhookTriggerConfig; webhook: CompiledWebhook }
  | { type: 'schedule'; config: ScheduleTriggerConfig };

/** A validated flow version, ready to run: nodes in graph order, every expression compiled. */
export interface CompiledFlow {
  key: string;
  trigger: CompiledTrigger;
  graph: CompiledGraph;
  references: References;
  /** The nodes that may answer the delivery that started a run: the flow URL waits for one of them. */
  replyNodes: string[];
  /** The flow started when a run fails. */
  failureFlow?: string;
  /** How its runs wait for one another (flowControl). */
  control: CompiledFlowControl;
}

export type { CompileOptions };

const documentValidator = new SchemaValidator<FlowDocument>(flowDocumentSchema, 'flow document');
const TRIGGER = 'trigger';

/** Every problem of a flow document, each naming its node and field. Empty when it can be published. */
export function validateFlow(document: unknown, options: CompileOptions): FieldError[] {
  return analyse(document, options).errors;
}

/**
 * A flow document's problems, and the named values it reads (`$vars`, `$secrets`, `$platform`, the
 * trigger's secrets) with their fields, for the caller to check against what the tenant has now.
 */
export function reviewFlow(
  document: unknown,
  options: CompileOptions,
): { errors: FieldError[]; reads: VariableRead[] } {
  const { errors, reads } = analyse(document, options);
  return { errors, reads };
}

/** Compile a flow document or throw a ValidationError listing every problem. */
export function compileFlow(document: unknown, options: CompileOptions): CompiledFlow {
  const { errors, flow } = analyse(document, options);
  if (!flow) throw new ValidationError('The flow document is not valid', errors);
  return flow;
}

function analyse(
  input: unknown,
  options: CompileOptions,
): { errors: FieldError[]; flow?: CompiledFlow; reads: VariableRead[] } {
  // Validation fills defaults in place: work on a copy so the caller's document stays as written.
  const document = structuredClone(input);
  const schemaErrors = documentValidator.errors(document);
  if (schemaErrors.length > 0) return { errors: schemaErrors, reads: [] };
  const doc = document as FlowDocument;
  const errors: FieldError[] = [];
  let trigger: CompiledTrigger | undefined;
  if (doc.trigger.type === 'schedule') {
    trigger = { type: 'schedule', config: doc.trigger.config as ScheduleTriggerConfig };
    errors.push(...scheduleErrors(trigger.config, '$.trigger.config'));
  } else {
    const config = (doc.trigger.config ?? {}) as WebhookTriggerConfig;
    const compiled = compileWebhook(config, (type) => options.registry.signature(type), '$.trigger.config');
    errors.push(...compiled.errors);
    if (compiled.webhook) trigger = { type: 'webhook', config, webhook: compiled.webhook };
  }

  const compiler = new GraphCompiler(options, errors);
  const graph = compiler.compile(doc.nodes, doc.edges, '$', TRIGGER);
  if (errors.length === 0) errors.push(...compiler.stepReadErrors());
  const control = compileFlowControl(doc.flowControl, options.sandbox, errors);
  const reads = [...triggerSecrets(doc), ...compiler.variableReads];
  if (errors.length > 0 || !trigger || !graph) return { errors, reads };
  return {
    errors,
    reads,
    flow: {
      key: doc.key,
      trigger,
      graph,
      references: compiler.references,
      replyNodes: graph.nodes.filter((node) => node.kind.answersDelivery).map((node) => node.id),
      failureFlow: doc.failureFlow,
      control,
    },
  };
}

/** The secrets a webhook trigger verifies deliveries with. */
function triggerSecrets(doc: FlowDocument): VariableRead[] {
  const verify = (doc.trigger.config as WebhookTriggerConfig | undefined)?.verify as
    | { secret?: string; previousSecret?: string }
    | undefined;
  return (['secret', 'previousSecret'] as const).flatMap((field) => {
    const name = verify?.[field];
    return name === undefined ? [] : [{ kind: 'secrets' as const, name, path: `$.trigger.config.verify.${field}` }];
  });
}

/**
 * The document as it is published: every node of a registered operation names the major version it
 * runs (the newest where the draft names none), so that registering a breaking major later changes
 * no published flow.
 */
export function pinOperationVersions(document: FlowDocument, registry: OperationRegistry): FlowDocument {
  return {
    ...document,
    nodes: document.nodes.map((node) => {
      if (node.operationVersion !== undefined || node.operation.startsWith(ACTION_PREFIX)) return node;
      const newest = registry.majors(node.operation).at(-1);
      return newest === undefined ? node : { ...node, operationVersion: newest };
    }),
  };
}
