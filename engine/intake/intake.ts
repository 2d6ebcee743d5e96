import { LRUCache } from 'lru-cache';
import { newId, isLargeJson, type JsonText, type JsonTextFault } from '../model/index.ts';
import { type CompiledFlowControl, messageKeys } from '../flow/index.ts';
import type { JsonChecker } from './json-checker.ts';
import { acceptMessages, type RunQueue } from '../queue/index.ts';
import type { MaintenanceMode, QuotaStatus, TenantQuotas } from '../limits/index.ts';
import type { CompiledFlowCache } from '../runtime/index.ts';
import { secretContext, type Keyring } from '../secrets/index.ts';
import {
  type AcceptedMessage,
  type FlowStore,
  type MessageStore,
  type NewMessage,
  type RunStore,
  type ValueStore,
  GroupCommit,
} from '../store/index.ts';
import {
  type EngineMetrics,
  type SpanContext,
  type Tracer,
  type TraceSpan,
  traceparentOf,
} from '../telemetry/index.ts';
import {
  headerValue,
  keptHeaders,
  topicOf,
  verifyDelivery,
  type CompiledWebhook,
  type Headers,
} from '../triggers/index.ts';

/** The active version behind a flow URL, with what verifying a delivery needs. */
interface ActiveTrigger {
  flowId: string;
  version: number;
  webhook: CompiledWebhook;
  verificationSecrets: string[];
  replyNodes: string[];
  /** The flow's keys, evaluated over each message as it is accepted. */
  control: CompiledFlowControl;
}

/** How long a URL that names no active flow is remembered as such. */
const MISS_TTL_MS = 1000;

export interface Delivery {
  tenantId: string;
  flowKey: string;
  rawBody: Buffer;
  /** The checked body (checkBody), as it came: stored without being parsed here. */
  body: JsonText;
  /** Headers the route set itself (not the sender's): kept with the message as they are. */
  ownHeaders?: Record<string, string>;
  headers: Headers;
  query: Record<string, unknown>;
  /** The span of the request that brought it (tracing on): the span that records it is its child. */
  trace?: SpanContext;
}

export type IntakeResult =
  | {
      outcome: 'accepted' | 'duplicate';
      messageId: string;
      runId: string;
      held: boolean;
      /** The flow's nodes that may reply to this delivery (the flow URL waits for one), if any. */
      replyNodes: string[];
    }
  | { outcome: 'no-flow' }
  | { outcome: 'unverified' }
  | { outcome: 'invalid'; field: string; reason: string }
  | { outcome: 'maintenance'; retryAfterSeconds: number }
  /** Over the tenant's quota: nothing recorded. */
  | { outcome: 'throttled'; retryAfterSeconds: number; reason: string };

/** Longest delivery id kept (it is a unique index key). */
export const MAX_DELIVERY_ID_LENGTH = 256;

export interface IntakeOptions {
  store: FlowStore & ValueStore & MessageStore & Pick<RunStore, 'debounceRuns'>;
  queue: RunQueue;
  flows: CompiledFlowCache;
  keyring: Keyring;
  /** How long a flow URL's resolution is reused; publish/activate in this process clears it at once. */
  cacheTtlMs: number;
  /** Most flow URLs kept resolved (INTAKE_CACHE_ENTRIES). */
  cacheEntries: number;
  /** While it is on, deliveries are refused with a Retry-After (nothing is recorded): senders retry. */
  maintenance: Pick<MaintenanceMode, 'cached'>;
  metrics: EngineMetrics;
  /** Headers a delivery's topic is read from, in order (the operation families' own first). */
  topicHeaders: readonly string[];
  quotas: TenantQuotas;
  /** Checks bodies, off the event loop when they are large. */
  checker: JsonChecker;
  tracer: Tracer;
}

/**
 * Accepts webhook deliveries: resolve the flow URL from the store (never from in-process
 * registration), verify, persist message and run, enqueue, and only then report acceptance.
 * A repeated delivery id returns the first message and runs nothing new.
 */
export class Intake {
  /**
   * Flow URLs resolved, by tenant and key: at most cacheEntries, each for cacheTtlMs; a URL that
   * names no flow for MISS_TTL_MS only (anyone may send random URLs).
   */
  private readonly triggers: LRUCache<string, Promise<ActiveTrigger | undefined>>;
  private readonly commits: GroupCommit<{ message: NewMessage; runId: string }, AcceptedMessage | undefined>;

  constructor(private readonly options: IntakeOptions) {
    // Two in flight keeps the store and Redis busy (one group being stored while another is enqueued);
    // more only made smaller groups that cost more per message (4: 10 % fewer deliveries/s, 8: 30 %).
    // A large body is written alone, in turn with groups of small ones: a small delivery never waits on big ones.
    this.commits = new GroupCommit((batch) => this.persist(batch), {
      maxBatch: 200,
      maxInFlight: 2,
      heavy: ({ message }) => isLargeJson(message.body),
    });
    // A TTL of 0 would mean "forever" to the cache: 1 ms is "not reused", as INTAKE_CACHE_TTL_MS=0 means.
    this.triggers = new LRUCache({ max: options.cacheEntries, ttl: Math.max(1, options.cacheTtlMs) });
  }

  private persist(batch: Array<{ message: NewMessage; runId: string }>): Promise<Array<AcceptedMessage | undefined>> {
    return acceptMessages(this.options.store, this.options.queue, batch);
  }

  /** Accept a delivery (see the class); every outcome is counted per tenant, a failure to store as `not-stored`. */
  async accept(delivery: Delivery): Promise<IntakeResult> {
    const { metrics } = this.options;
    try {
      // A resolution another process made stale (it deactivated, deleted or published the flow since):
      // the store refused the message, so the URL is resolved again, once.
      let result = await this.decide(delivery);
      if (!result) {
        this.invalidate(delivery.tenantId, delivery.flowKey);
        result = (await this.decide(delivery)) ?? { outcome: 'no-flow' };
      }
      metrics.delivery(delivery.tenantId, result.outcome === 'accepted' && result.held ? 'held' : result.outcome);
      return result;
    } catch (error) {
      metrics.delivery(delivery.tenantId, 'not-stored');
      throw error;
    }
  }

  /** The delivery's outcome; undefined when the flow version it was resolved to is no longer active. */
  private async decide(delivery: Delivery): Promise<IntakeResult | undefined> {
    const maintenance = this.options.maintenance.cached();
    if (maintenance) return { outcome: 'maintenance', retryAfterSeconds: maintenance.retryAfterSeconds };
    const trigger = await this.resolve(delivery.tenantId, delivery.flowKey);
    if (!trigger) return { outcome: 'no-flow' };
    const { webhook } = trigger;
    if (!verifyDelivery(webhook.verification, delivery.rawBody, delivery.headers, trigger.verificationSecrets))
      return { outcome: 'unverified' };
    if (webhook.topic) {
      const topic = headerValue(delivery.headers, webhook.topic.header);
      if (topic !== webhook.topic.value) {
        return {
          outcome: 'invalid',
          field: `$.headers["${webhook.topic.header}"]`,
          reason: `is ${topic === undefined ? 'missing' : `"${topic}"`}; this flow takes ${webhook.topic.value}`,
        };
      }
    }

    const idHeader =
      headerValue(delivery.headers, 'idempotency-key') !== undefined ? 'idempotency-key' : webhook.deliveryIdHeader;
    const deliveryId = idHeader ? headerValue(delivery.headers, idHeader) : undefined;
    if (deliveryId !== undefined && deliveryId.length > MAX_DELIVERY_ID_LENGTH) {
      return {
        outcome: 'invalid',
        field: `$.headers["${idHeader!.toLowerCase()}"]`,
        reason: `is longer than ${MAX_DELIVERY_ID_LENGTH} characters`,
      };
    }
    // Last: a delivery that would be refused anyway costs no quota.
    const admission = await this.options.quotas.admitDelivery(delivery.tenantId);
    if (!admission.admitted) return { outcome: 'throttled', ...admission };
    const message: NewMessage = {
      tenantId: delivery.tenantId,
      id: newId(),
      flowId: trigger.flowId,
      flowVersion: trigger.version,
      deliveryId: deliveryId ?? null,
      topic: topicOf(delivery.headers, this.options.topicHeaders),
      body: delivery.body,
      headers: { ...keptHeaders(delivery.headers, webhook, this.options.topicHeaders), ...delivery.ownHeaders },
      query: delivery.query,
    };
    if (trigger.control.concurrency || trigger.control.debounce)
      Object.assign(message, await messageKeys(trigger.control, message));
    const runId = newId();
    const span = this.options.tracer.enabled ? this.sendSpan(delivery, message, runId) : undefined;
    if (span) message.traceparent = traceparentOf(span.context);
    let accepted: AcceptedMessage | undefined;
    try {
      accepted = await this.commits.submit({ message, runId });
    } catch (error) {
      span?.end('not-stored');
      throw error;
    }
    if (!accepted) {
      span?.end('stale');
      return undefined;
    }
    const { duplicate, messageId, run } = accepted;
    span?.set({ 'tributary.delivery.outcome': duplicate ? 'duplicate' : run.status === 'held' ? 'held' : 'accepted' });
    span?.end();
    return {
      outcome: duplicate ? 'duplicate' : 'accepted',
      messageId,
      runId: run.id,
      held: run.status === 'held',
      replyNodes: trigger.replyNodes,
    };
  }

  /**
   * The producer span of a message (messaging conventions: the flow is the destination): its context is
   * stored with the message, and each of its runs' spans is its child and links to it.
   */
  private sendSpan(delivery: Delivery, message: NewMessage, runId: string): TraceSpan {
    return this.options.tracer.start(`send ${delivery.flowKey}`, {
      kind: 'producer',
      parent: delivery.trace,
      attributes: {
        'messaging.system': 'tributary',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': delivery.flowKey,
        'messaging.message.id': message.id,
        'tributary.tenant.id': message.tenantId,
        'tributary.flow.id': message.flowId,
        'tributary.flow.key': delivery.flowKey,
        'tributary.flow.version': message.flowVersion,
        'tributary.run.id': runId,
      },
    });
  }

  /** Whether a delivery's body is JSON that can be accepted, checked off the event loop when it is large. */
  checkBody(raw: Buffer): Promise<JsonTextFault | undefined> {
    return this.options.checker.check(raw);
  }

  /** The tenant's intake quota and what is left of it. */
  quota(tenantId: string): Promise<QuotaStatus> {
    return this.options.quotas.status(tenantId);
  }

  /** Forget a flow URL's resolution (after publish, activate, deactivate or delete). */
  invalidate(tenantId: string, flowKey: string) {
    this.triggers.delete(`${tenantId}\0${flowKey}`);
  }

  /** Forget every flow URL of a tenant (it was deleted). */
  invalidateTenant(tenantId: string) {
    for (const key of [...this.triggers.keys()]) if (key.startsWith(`${tenantId}\0`)) this.triggers.delete(key);
  }

  private resolve(tenantId: string, flowKey: string): Promise<ActiveTrigger | undefined> {
    const key = `${tenantId}\0${flowKey}`;
    const cached = this.triggers.get(key);
    if (cached) return cached;
    const trigger = this.load(tenantId, flowKey);
    this.triggers.set(key, trigger);
    trigger.then(
      (found) => {
        if (!found && this.triggers.peek(key) === trigger)
          this.triggers.set(key, trigger, { ttl: Math.max(1, Math.min(MISS_TTL_MS, this.options.cacheTtlMs)) });
      },
      () => this.triggers.peek(key) === trigger && this.triggers.delete(key),
    );
    return trigger;
  }

  private async load(tenantId: string, flowKey: string): Promise<ActiveTrigger | undefined> {
    const { store, flows, keyring } = this.options;
    const record = await store.findFlowByKey(tenantId, flowKey);
    if (!record?.active || record.activeVersion === null) return undefined;
    const { trigger, replyNodes, control } = await flows.get(tenantId, record.id, record.activeVersion);
    // A scheduled flow has no URL.
    if (trigger.type !== 'webhook') return undefined;
    const { webhook } = trigger;
    const names = webhook.verification.kind === 'none' ? [] : webhook.verification.secrets;
    const verificationSecrets =
      names.length === 0
        ? []
        : (await store.sealedSecrets(tenantId, names)).map((sealed) =>
            keyring.open(sealed, secretContext(tenantId, sealed.name)),
          );
    return {
      flowId: record.id,
      version: record.activeVersion,
      webhook,
      verificationSecrets,
      replyNodes,
      control,
    };
  }
}
