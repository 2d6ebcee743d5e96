import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { HttpClient } from '../outbound/index.ts';
import type { OpenedDestination } from './destinations.ts';
import { type BatchCounts, type BatchStatus, type IncrementalField, SchemaValidator } from '../model/index.ts';
import { ACTION_NAME, ACTION_PREFIX, actionNodeConfigSchema } from './actions.ts';
import { GENERIC_TOPIC_HEADERS, type WebhookSignature } from '../triggers/index.ts';

export type { OpenedDestination } from './destinations.ts';

/** What the trigger handed to the run: the webhook's body, headers (verification headers removed) and query. */
export interface MessageInput {
  messageId: string;
  receivedAt: string;
  body: unknown;
  headers: Record<string, string>;
  query: Record<string, unknown>;
}

/** Returned by an operation to end the run early with a non-failure status (see `ctx.stop`). */
export class StopSignal {
  constructor(
    readonly status: 'filtered' | 'skipped',
    readonly reason: string,
  ) {}
}

export interface OperationContext<Config> {
  /** The node's config with every `{{ }}` resolved, validated against the operation's schema. */
  config: Config;
  input: MessageInput;
  /** Outputs of the nodes that ran before this one, by node id. */
  steps: Readonly<Record<string, unknown>>;
  /** Bound to tenant, flow, run and node. Never log secrets: resolved config values may hold them. */
  logger: Logger;
  /**
   * Stable per message and step (the same on every retry, after a crash, and in every replay of the message): pass
   * it to the systems you call.
   */
  idempotencyKey: string;
  /** Fires when the node times out or the worker shuts down. */
  signal: AbortSignal;
  /** Outbound HTTP: keep-alive, redirects, size limits, and this deployment's refusal of non-public addresses. */
  http: HttpClient;
  tenantId: string;
  flowId: string;
  runId: string;
  nodeId: string;
  /** 1 on the first try of this node, 2 on its first retry... */
  attempt: number;
  /**
   * A memoized sub-step: `fn` runs once per run; its result is checkpointed and returned again on a
   * retry or after a crash. Use it around each side effect of a multi-step operation.
   */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * The tenant's destination of this name, credentials opened. Their values are kept out of this
   * run's outputs, checkpoints and errors; do not log them.
   */
  destination(name: string): Promise<OpenedDestination>;
  /**
   * Fan-out operations: this run's batch, created with its window on first use and the same on every
   * later pass of the run.
   */
  batch(window: { from: string | null; to: string | null }): Promise<BatchHandle>;
  /** Runs one of the tenant's actions (the latest version unless one is given) on `input`. */
  action(name: string, input: unknown, version?: number): Promise<unknown>;
  /** The tenant's data spaces: read a document's value, create or replace one. */
  dataSpaces: {
    get(space: string, key: string): Promise<unknown>;
    put(space: string, key: string, value: unknown): Promise<{ created: boolean }>;
  };
  /** The flow's incremental field: where its next poll starts. */
  incrementalField: {
    get(): Promise<IncrementalField | undefined>;
    set(value: { field: string; value: string | null; overlapMs: number }): Promise<IncrementalField>;
  };
  /**
   * A test run (Test API): nothing of the platform changes. Operations with effects that are not
   * their purpose (marking an order as exported) leave them out.
   */
  testRun: boolean;
  /** Reports progress (0–100) to the queue, for the dashboard. */
  progress(percent: number): void;
  /** End the run here with `filtered` or `skipped` and this reason; later nodes do not run. */
  stop(status: StopSignal['status'], reason: string): StopSignal;
}

export interface BatchHandle {
  id: string;
  /**
   * Adds items as tasks and queues them: each runs the nodes after the fan-out node, with the item
   * as that node's output (and as the task's input body). Items the batch holds already (by key)
   * are dropped, unless their task never reached the queue. Returns how many were queued.
   */
  add(items: Array<{ key: string; item: unknown }>): Promise<number>;
  counts(): Promise<BatchCounts>;
  setStatus(status: BatchStatus): Promise<void>;
}

export interface OperationDefinition<Config = unknown> {
  /** Unique, dotted lower-case name used in flow documents (`http.request`). */
  name: string;
  title: string;
  description: string;
  configSchema: JSONSchema & object;
  /** Semantic version of the operation's behaviour and config (a breaking change is a new major). */
  version: string;
  /** Set for operations kept for existing flows; `successor` names the replacement. */
  deprecated?: { successor: string };
  /** True when running the operation changes an outside system. */
  sideEffects: boolean;
  /**
   * A side-effecting operation whose config changes nothing this time (an HTTP GET): a dry run performs it
   * for real, so the nodes after it test on a real answer.
   */
  readOnly?(config: Config): boolean;
  /**
   * The operation fans out: its items become a batch of tasks that run the nodes after it, and the
   * run that imported them ends after this node.
   */
  fanOut?: boolean;
  run(ctx: OperationContext<Config>): Promise<unknown>;
  /**
   * Side-effecting operations: what `run` would send (method, URL, headers with credentials masked,
   * body), without sending it, for dry runs.
   */
  preview?(ctx: OperationContext<Config>): Promise<unknown>;
}

/** Declares an operation; the config type is derived from its JSON Schema. */
export function defineOperation<const Schema extends JSONSchema & object, Config = FromSchema<Schema>>(
  definition: Omit<OperationDefinition, 'configSchema' | 'run' | 'preview' | 'readOnly'> & {
    configSchema: Schema;
    readOnly?(config: NoInfer<Config>): boolean;
    // NoInfer: the schema alone decides the config type (computed once, as Config); inferring it back from `run` is
    // slow and ambiguous.
    run(ctx: OperationContext<NoInfer<Config>>): Promise<unknown>;
    preview?(ctx: OperationContext<NoInfer<Config>>): Promise<unknown>;
  },
): OperationDefinition<unknown> {
  return definition as unknown as OperationDefinition<unknown>;
}

export interface RegisteredOperation {
  definition: OperationDefinition<unknown>;
  config: SchemaValidator<unknown>;
}

/** The major of a semantic version: a node pins it, since only a new major may break a flow. */
export const majorOf = (version: string) => Number.parseInt(version, 10);

/**
 * The operations a process knows, by name and major version (each config schema compiled once,
 * here), and the webhook signatures their families declare.
 */
export class OperationRegistry {
  private readonly operations = new Map<string, Map<number, RegisteredOperation>>();
  private readonly signatures = new Map<string, WebhookSignature>();

  constructor(definitions: Iterable<OperationDefinition<unknown>> = [], signatures: Iterable<WebhookSignature> = []) {
    for (const definition of definitions) this.register(definition);
    for (const signature of signatures) {
      if (this.signatures.has(signature.type)) throw new Error(`webhook signature ${signature.type} is declared twice`);
      this.signatures.set(signature.type, signature);
    }
  }

  /** The webhook signature a trigger's `verify.type` names. */
  signature(type: string): WebhookSignature | undefined {
    return this.signatures.get(type);
  }

  /** Headers deliveries name their topic in: the vendors' own, then the generic ones. */
  topicHeaders(): string[] {
    return [
      ...new Set([
        ...[...this.signatures.values()].flatMap((signature) =>
          signature.topicHeader ? [signature.topicHeader.toLowerCase()] : [],
        ),
        ...GENERIC_TOPIC_HEADERS,
      ]),
    ];
  }

  /** Every declared webhook signature. */
  listSignatures(): WebhookSignature[] {
    return [...this.signatures.values()];
  }

  register(definition: OperationDefinition<unknown>): this {
    const major = majorOf(definition.version);
    if (!Number.isInteger(major) || major < 1)
      throw new Error(`operation ${definition.name} has no major version in "${definition.version}"`);
    const majors = this.operations.get(definition.name) ?? new Map<number, RegisteredOperation>();
    if (majors.has(major)) throw new Error(`operation ${definition.name} v${major} is registered twice`);
    majors.set(major, {
      definition,
      config: new SchemaValidator(definition.configSchema, `${definition.name} config`),
    });
    this.operations.set(definition.name, new Map([...majors].sort(([a], [b]) => a - b)));
    return this;
  }

  /** The major versions registered under a name, oldest first. */
  majors(name: string): number[] {
    return [...(this.operations.get(name)?.keys() ?? [])];
  }

  /**
   * A registered operation (that major, or the newest), or for `action:<name>` the node type that
   * runs the tenant's action (whose version is in the node's config).
   */
  get(name: string, major?: number): RegisteredOperation | undefined {
    if (name.startsWith(ACTION_PREFIX)) return this.actionNode(name.slice(ACTION_PREFIX.length));
    const majors = this.operations.get(name);
    return major === undefined ? [...(majors?.values() ?? [])].at(-1) : majors?.get(major);
  }

  /** Named by what tenants write in their flows: kept for the most recently used only. */
  private readonly actionNodes = new LRUCache<string, RegisteredOperation>({ max: 1000 });

  private actionNode(action: string): RegisteredOperation | undefined {
    if (!ACTION_NAME.test(action)) return undefined;
    let registered = this.actionNodes.get(action);
    if (!registered) {
      const definition: OperationDefinition<{ input?: unknown; version?: number }> = {
        name: `${ACTION_PREFIX}${action}`,
        title: `Action ${action}`,
        description: `The tenant's action ${action}: a JSONata transform of its input.`,
        version: '1.0.0',
        sideEffects: false,
        configSchema: actionNodeConfigSchema,
        run: (ctx) => ctx.action(action, ctx.config.input ?? null, ctx.config.version),
      };
      registered = { definition, config: this.actionConfig };
      this.actionNodes.set(action, registered);
    }
    return registered;
  }

  private readonly actionConfig = new SchemaValidator<unknown>(actionNodeConfigSchema, 'action config');

  /** Every registered operation, by name, then major. */
  list(): RegisteredOperation[] {
    return [...this.operations.keys()].sort().flatMap((name) => [...this.operations.get(name)!.values()]);
  }
}
