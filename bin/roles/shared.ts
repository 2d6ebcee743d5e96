import type { Logger } from 'pino';
import { ClientAuthenticator, publicSigningKeys, SignInThrottle, TokenVerifier } from '../../api/auth/index.ts';
import { ExpressionSandbox } from '../../engine/expressions/index.ts';
import type { CompileOptions } from '../../engine/flow/index.ts';
import { HttpClient } from '../../engine/outbound/index.ts';
import { type FamilyParts, familyParts, type OperationFamily, OperationRegistry } from '../../engine/plugins/index.ts';
import {
  FlowSchedules,
  HEARTBEAT_TTL_MS,
  RunQueue,
  TenantLimitsInRedis,
  TenantMoves,
} from '../../engine/queue/index.ts';
import { ioredisOf } from '../../engine/redis/index.ts';
import { MaintenanceMode, OutboundBudgets, RateLimiter, TenantQuotas } from '../../engine/limits/index.ts';
import type { Keyring } from '../../engine/secrets/index.ts';
import type { Store } from '../../engine/store/index.ts';
import type { Tracer } from '../../engine/telemetry/index.ts';
import { families } from '../../operations/index.ts';
import { baseUrl, type Config, outboundRefusal, placedTenants } from '../config/config.ts';
import type { DataDirLock } from '../data-dir.ts';
import { PrometheusMetrics } from '../metrics.ts';
import { openConfiguredStore } from '../open-store.ts';
import type { RedisTarget } from '../redis.ts';

/** What every role of a process shares: the store, Redis's queues and limits, compilation, metrics, auth. */
export interface SharedParts {
  config: Config;
  logger: Logger;
  tracer: Tracer;
  store: Store;
  /** The store for background work (on PGlite, the same database in the background lane). */
  workerStore: Store;
  keyring: Keyring;
  lock?: DataDirLock;
  outbound: HttpClient;
  /** What the operation families bring: operations, webhook signatures, destination types, subscribers. */
  families: FamilyParts;
  compile: CompileOptions;
  queue: RunQueue;
  schedules: FlowSchedules;
  quotas: TenantQuotas;
  tenantLimits: TenantLimitsInRedis;
  /** Operators' moves of tenants between the run path's slot groups. */
  moves: TenantMoves;
  rateLimiter: RateLimiter;
  clients: ClientAuthenticator;
  metrics: PrometheusMetrics;
  maintenance: MaintenanceMode;
  verifier: TokenVerifier;
  /** Where clients reach this process; known once the API listens. */
  url(): string;
  setUrl(url: string): void;
}

/** The parts every role shares, over one store and one Redis. */
export async function assembleShared(
  config: Config,
  redis: RedisTarget,
  options: { families?: OperationFamily[]; logger: Logger; tracer: Tracer },
): Promise<SharedParts> {
  const { logger, tracer } = options;
  let url = baseUrl(config);
  const { store, workerStore, keyring, lock } = await openConfiguredStore(config);
  const parts = familyParts(options.families ?? families);
  const compile = compileOptions(config, parts);
  const queue = new RunQueue({
    connection: redis.connection('producer'),
    prefix: config.redisPrefix,
    tenantConcurrency: config.tenantConcurrency,
    reservedSlotsPercent: config.reservedSlotsPercent,
    // A lease outlives a job's lock: a dead worker's runs are taken over before they stop counting.
    leaseMs: Math.max(config.workerLockMs, HEARTBEAT_TTL_MS),
    groups: config.runGroups,
    placed: placedTenants(config),
    moved: () => store.listRunPlacements(),
  });
  const schedules = new FlowSchedules(store, queue, {
    connection: redis.connection('producer'),
    prefix: config.redisPrefix,
  });
  const queues = [...queue.queues, schedules.queue];
  // Any connection reaches every master; the first group's is at hand.
  const client = () => ioredisOf(queue.queues[0].client);
  const quotas = new TenantQuotas(client, {
    groups: queue.groups.map(({ slot, lanes }) => ({ slot, backlogKey: lanes.backlogKey })),
    groupOf: (tenantId) => queue.groupOf(tenantId).index,
    deliveries: {
      perSecond: config.tenantDeliveriesPerSecond,
      burst: config.tenantDeliveryBurst,
      maxQueuedRuns: config.tenantMaxQueuedRuns,
    },
  });
  const rateLimiter = new RateLimiter(client, config.redisPrefix);
  const budgets = new OutboundBudgets(client, {
    prefix: config.redisPrefix,
    initialConcurrency: config.outboundStartConcurrency,
    maxConcurrency: config.outboundMaxConcurrency,
    wake: (tenantId, runIds) => {
      for (const runId of runIds) queue.wake(tenantId, runId, { whenDelayed: true }).catch(() => {});
    },
  });
  const outbound = new HttpClient({
    refusedAddress: outboundRefusal(config),
    tracer,
    gate: budgets,
    pricers: parts.answerPricers,
  });
  const tenantLimits = new TenantLimitsInRedis(queue, quotas);
  await queue.refreshPlacements();
  const maintenance = new MaintenanceMode(queues, config.intakeCacheTtlMs);
  await maintenance.refresh();
  return {
    config,
    logger,
    tracer,
    store,
    workerStore,
    keyring,
    lock,
    outbound,
    families: parts,
    compile,
    queue,
    schedules,
    quotas,
    tenantLimits,
    moves: new TenantMoves(queue, workerStore, {
      place: async (id) => {
        await tenantLimits.place(workerStore, id);
        await schedules.placeFlows(id);
      },
      logger,
    }),
    rateLimiter,
    clients: new ClientAuthenticator(store, new SignInThrottle(rateLimiter)),
    metrics: new PrometheusMetrics(queues, {
      backlog: () => queue.backlog(),
      deliveryQuotaLeft: () => quotas.available(),
      held: () => store.heldRuns(),
      budgets: () => budgets.statuses(),
      keyedWaiting: () => queue.keyedWaiting(),
    }),
    maintenance,
    verifier: tokenVerifier(config, store, () => url),
    url: () => url,
    setUrl: (listening) => {
      url = listening;
    },
  };
}

/** How flows compile here: the families' operations and signatures, expressions in sandboxes, node timeouts. */
function compileOptions(config: Config, parts: FamilyParts): CompileOptions {
  return {
    registry: new OperationRegistry(parts.operations, parts.webhookSignatures),
    sandbox: new ExpressionSandbox({
      timeoutMs: config.expressionTimeoutMs,
      memoryMb: config.expressionMemoryMb,
      processes: config.expressionProcesses,
      maxDepth: config.expressionMaxDepth,
      maxResultBytes: config.maxStepOutputBytes,
    }),
    defaultTimeoutMs: config.nodeTimeoutMs,
  };
}

/** Tokens checked against AUTH_JWKS_URL's keys, or the embedded issuer's (the issuer is this process's URL). */
function tokenVerifier(config: Config, store: Store, url: () => string): TokenVerifier {
  return new TokenVerifier({
    issuer: () => config.authIssuer ?? url(),
    audience: config.authAudience,
    keys: config.authJwksUrl
      ? { jwksUrl: new URL(config.authJwksUrl) }
      : {
          stored: () => publicSigningKeys(store),
          clientExists: async (clientId) => (await store.getClient(clientId)) !== undefined,
        },
  });
}
