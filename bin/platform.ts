import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino, type Logger } from 'pino';
import { createRequestListener, type Readiness } from '../api/app.ts';
import { publicSigningKeys, TokenIssuer } from '../api/auth/index.ts';
import { TokenVerifier } from '../api/auth/index.ts';
import type { CompileOptions } from '../engine/flow/index.ts';
import { HttpClient } from '../engine/outbound/index.ts';
import { Intake, JsonChecker } from '../engine/intake/index.ts';
import { OperationRegistry, type OperationDefinition, ActionRunner } from '../engine/plugins/index.ts';
import {
  HEARTBEAT_TTL_MS,
  inspectQueue,
  ioredisOf,
  QueueRecovery,
  TenantQuotas,
  TenantLimitsInRedis,
  ENQUEUE_TIMEOUT_MS,
  runJob,
  RunQueue,
  RunWorker,
  QueueReconciler,
  ReplayRunner,
  QueueAdmin,
  FlowSchedules,
  TickWorker,
  RateLimiter,
  MaintenanceMode,
} from '../engine/queue/index.ts';
import { ExpressionSandbox } from '../engine/expressions/index.ts';
import { Executor, TestRunner, CompiledFlowCache } from '../engine/runtime/index.ts';
import { Keyring } from '../engine/secrets/index.ts';
import { engineServices } from '../engine/services/index.ts';
import {
  type AlertStore,
  type LogStore,
  type RetentionStore,
  type StateKind,
  type StateLimit,
  type Store,
  PgliteDriver,
  loadPgDriver,
  SqlStore,
  PARTITIONS_AHEAD_MS,
} from '../engine/store/index.ts';
import { allOperations, destinationTypes, webhookSignatures, webhookSubscribers } from '../operations/index.ts';
import { serveAdminSocket, storeAdmin } from './admin.ts';
import { buildCommit } from './build.ts';
import { PrometheusMetrics } from './metrics.ts';
import { AlertWatcher } from '../engine/alerts/index.ts';
import { RUN_PAGES_PATH, RunPageLinks } from '../api/auth/index.ts';
import { noTracer } from '../engine/telemetry/index.ts';
import { startTracing, type Tracing, type TracingEnv, tracingSettings } from './tracing.ts';
import { isOperatorAuthorization } from '../api/auth/index.ts';
import { ClientAuthenticator } from '../api/auth/index.ts';
import { ApiCallLimit, SignInThrottle } from '../api/auth/index.ts';
import { HttpProblem } from '../api/http/index.ts';
import { baseUrl, type Config, outboundRefusal } from './config.ts';
import { DataDirLock, embeddedKeyring, embeddedStorePath } from './data-dir.ts';
import { printableUrl, redisAnswers, RedisTarget, startEmbeddedRedis, stopEmbeddedRedis } from './redis.ts';

export const VERSION = '0.1.0';

/** How long the run link in an alert opens the run's page. */
const ALERT_LINK_SECONDS = 86_400;

/** Paths of secrets and credentials pino masks in any logged object: a second fence, not the first. */
const REDACT = [
  'authorization',
  'password',
  'secret',
  'token',
  'client_secret',
  'config.auth',
  '*.authorization',
  '*.password',
  '*.secret',
  '*.client_secret',
  '*.token',
];

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[REDACTED]' } });
}

export interface Roles {
  api: boolean;
  worker: boolean;
  /** Start redis-server as a child when nothing answers at REDIS_URL (the one-process `serve`). */
  embeddedRedis?: boolean;
}

/**
 * The embedded store (PGlite under DATA_DIR, with its lock) or PostgreSQL at DATABASE_URL.
 * `workerStore` is the store for background work: on PGlite, the same database in the background
 * lane, so that requests are answered before runs are worked off; on PostgreSQL, the same store.
 */
export async function openStore(
  config: Config,
): Promise<{ store: Store; workerStore: Store; keyring: Keyring; lock?: DataDirLock }> {
  if (config.databaseUrl) {
    if (!config.secretsKey)
      throw new Error(
        'SECRETS_KEY is required with DATABASE_URL: every process must seal and open secrets with the same keys',
      );
    const PgDriver = await loadPgDriver();
    const store = await SqlStore.open(
      new PgDriver({ connectionString: config.databaseUrl, schema: config.databaseSchema }),
    );
    return { store, workerStore: store, keyring: Keyring.parse(config.secretsKey) };
  }
  const lock = DataDirLock.acquire(config.dataDir);
  try {
    const driver = await PgliteDriver.open(embeddedStorePath(config.dataDir), config.databaseSchema);
    const store = await SqlStore.open(driver);
    const keyring = config.secretsKey ? Keyring.parse(config.secretsKey) : embeddedKeyring(config.dataDir);
    return { store, workerStore: new SqlStore(driver.background()), keyring, lock };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** A running Tributary: API, worker, or both, over one store and one Redis. */
export class Platform {
  private constructor(
    readonly config: Config,
    readonly store: Store,
    readonly queue: RunQueue,
    readonly logger: Logger,
    readonly url: string,
    private readonly parts: {
      worker?: RunWorker;
      ticks?: TickWorker;
      reconciler?: QueueReconciler;
      replays?: ReplayRunner;
      alerts?: AlertWatcher;
      recovery?: QueueRecovery;
      logPruning?: NodeJS.Timeout;
      schedules: FlowSchedules;
      sandbox: ExpressionSandbox;
      server?: http.Server;
      adminSocket?: http.Server;
      metricsServer?: http.Server;
      redis: RedisTarget;
      redisChild?: ChildProcess;
      lock?: DataDirLock;
      eventLoop: EventLoopLag;
      /** Checks large webhook bodies off the event loop. */
      bodies: JsonChecker;
      tracing?: Tracing;
    },
  ) {}

  static async start(
    config: Config,
    roles: Roles,
    options: {
      logger?: Logger;
      operations?: OperationDefinition<unknown>[];
      /** Where the OTEL_* variables are read from (the process's environment by default). */
      tracingEnv?: TracingEnv;
    } = {},
  ): Promise<Platform> {
    const logger = options.logger ?? createLogger(config);
    if ((!roles.api || !roles.worker) && !config.databaseUrl) {
      throw new Error('separate API and worker processes share a server database: set DATABASE_URL=postgres://...');
    }
    const tracingWanted = tracingSettings(options.tracingEnv ?? process.env);
    const tracing = tracingWanted && (await startTracing(tracingWanted, { role: roleName(roles), version: VERSION }));
    if (tracingWanted) logger.info({ url: tracingWanted.url, protocol: tracingWanted.protocol }, 'exporting traces');
    let redisChild: ChildProcess | undefined;
    if (roles.embeddedRedis && !config.redisClusterNodes && !(await redisAnswers(config.redisUrl))) {
      redisChild = await startEmbeddedRedis(config.redisUrl, config.dataDir);
      logger.info({ redisUrl: printableUrl(config.redisUrl) }, 'started an embedded redis-server');
    }
    const redis = new RedisTarget(config.redisUrl, config.redisClusterNodes);
    try {
      return await Platform.assemble(config, roles, options, logger, tracing, redis, redisChild);
    } catch (error) {
      redis.close();
      // A start that fails (a port taken, a store that cannot open) leaves no redis-server behind.
      await stopEmbeddedRedis(redisChild);
      await tracing?.shutdown();
      throw error;
    }
  }

  private static async assemble(
    config: Config,
    roles: Roles,
    options: { operations?: OperationDefinition<unknown>[] },
    logger: Logger,
    tracing: Tracing | undefined,
    redis: RedisTarget,
    redisChild: ChildProcess | undefined,
  ): Promise<Platform> {
    const tracer = tracing?.tracer ?? noTracer;
    const outbound = new HttpClient({ refusedAddress: outboundRefusal(config), tracer });
    const { store, workerStore, keyring, lock } = await openStore(config);
    await store.setStateLimits(stateLimits(config));
    await store.setRetentionPolicy({
      days: config.retentionDays,
      failedDays: config.retentionFailedDays,
      maxDays: config.retentionMaxDays,
    });
    let url = baseUrl(config);
    const compile: CompileOptions = {
      registry: new OperationRegistry(options.operations ?? allOperations, webhookSignatures),
      sandbox: new ExpressionSandbox({
        timeoutMs: config.expressionTimeoutMs,
        memoryMb: config.expressionMemoryMb,
        processes: config.expressionProcesses,
        maxDepth: 300,
        maxResultBytes: config.maxStepOutputBytes,
      }),
      defaultTimeoutMs: config.nodeTimeoutMs,
    };
    const queue = new RunQueue({
      connection: redis.connection('producer'),
      prefix: config.redisPrefix,
      tenantConcurrency: config.tenantConcurrency,
      reservedSlotsPercent: config.reservedSlotsPercent,
      // A lease outlives a job's lock: a dead worker's runs are taken over before they stop counting.
      leaseMs: Math.max(config.workerLockMs, HEARTBEAT_TTL_MS),
    });
    const schedules = new FlowSchedules(store, queue.lanes, {
      connection: redis.connection('producer'),
      prefix: config.redisPrefix,
    });
    const queues = [queue.queue, schedules.queue];
    const quotas = new TenantQuotas(() => ioredisOf(queue.queue.client), {
      prefix: config.redisPrefix,
      backlogKey: queue.lanes.backlogKey,
      deliveries: {
        perSecond: config.tenantDeliveriesPerSecond,
        burst: config.tenantDeliveryBurst,
        maxQueuedRuns: config.tenantMaxQueuedRuns,
      },
    });
    const tenantLimits = new TenantLimitsInRedis(queue.lanes, quotas);
    const rateLimiter = new RateLimiter(() => ioredisOf(queue.queue.client), config.redisPrefix);
    const clients = new ClientAuthenticator(store, new SignInThrottle(rateLimiter));
    const metrics = new PrometheusMetrics(queues, {
      backlog: () => queue.lanes.backlog(),
      deliveryQuotaLeft: () => quotas.available(),
      held: () => store.heldRuns(),
    });
    const maintenance = new MaintenanceMode(queues, config.intakeCacheTtlMs);
    await maintenance.refresh();
    const verifier = new TokenVerifier({
      issuer: () => config.authIssuer ?? url,
      audience: config.authAudience,
      keys: config.authJwksUrl
        ? { jwksUrl: new URL(config.authJwksUrl) }
        : {
            stored: () => publicSigningKeys(store),
            clientExists: async (clientId) => (await store.getClient(clientId)) !== undefined,
          },
    });

    let worker: RunWorker | undefined;
    let ticks: TickWorker | undefined;
    let logPruning: NodeJS.Timeout | undefined;
    let reconciler: QueueReconciler | undefined;
    let recovery: QueueRecovery | undefined;
    let replays: ReplayRunner | undefined;
    let alerts: AlertWatcher | undefined;
    if (roles.worker) {
      const flows = new CompiledFlowCache(workerStore, compile);
      const executor = new Executor({
        store: workerStore,
        actions: new ActionRunner(workerStore, compile.sandbox),
        flows,
        keyring,
        logger,
        http: outbound,
        maxOutputBytes: config.maxStepOutputBytes,
        maxRetryDelayMs: 3_600_000,
        enqueue: (runs) => queue.enqueue(runs.map(runJob)),
        wake: (runId) => queue.wake(runId),
        tracer,
      });
      worker = new RunWorker(executor, workerStore, queue, {
        connection: redis.connection('worker'),
        prefix: config.redisPrefix,
        concurrency: config.workerConcurrency,
        lockDurationMs: config.workerLockMs,
        stalledIntervalMs: config.workerStalledIntervalMs,
        logger,
        metrics,
      });
      await worker.start();
      ticks = new TickWorker(workerStore, queue, schedules, {
        connection: redis.connection('worker'),
        prefix: config.redisPrefix,
        logger,
      });
      await ticks.start();
      logPruning = pruneHourly(workerStore, config.runLogRetentionDays, logger);
      reconciler = new QueueReconciler(queue, workerStore, {
        graceMs: Math.max(config.workerLockMs, 2 * ENQUEUE_TIMEOUT_MS),
        intervalMs: 2 * config.workerStalledIntervalMs,
        logger,
        metrics,
      });
      reconciler.start();
      replays = new ReplayRunner(workerStore, queue, logger);
      replays.start();
      const links = new RunPageLinks(keyring);
      alerts = new AlertWatcher({
        store: workerStore,
        keyring,
        http: outbound,
        logger,
        checkEveryMs: config.alertCheckIntervalMs,
        timeoutMs: config.alertTimeoutMs,
        // An alert's link opens the run for a day, read-only: it goes to a chat or a pager, not to a client.
        runUrl: (tenantId, runId) =>
          `${url}${RUN_PAGES_PATH}/${links.token({ tenantId, runId, expiresAt: Math.floor(Date.now() / 1000) + ALERT_LINK_SECONDS, canReplay: false })}`,
      });
      alerts.start();
      recovery = new QueueRecovery(() => ioredisOf(queue.queue.client), {
        prefix: config.redisPrefix,
        intervalMs: 2000,
        reconciler,
        syncSchedules: () => schedules.syncAll(),
        syncTenantLimits: () => tenantLimits.syncAll(workerStore),
        logger,
      });
      await recovery.start();
    }

    let server: http.Server | undefined;
    let adminSocket: http.Server | undefined;
    const eventLoop = new EventLoopLag();
    const bodies = new JsonChecker();
    if (roles.api) {
      const intake = new Intake({
        store,
        queue,
        flows: new CompiledFlowCache(store, compile),
        keyring,
        cacheTtlMs: config.intakeCacheTtlMs,
        cacheEntries: config.intakeCacheEntries,
        maintenance,
        metrics,
        topicHeaders: compile.registry.topicHeaders(),
        quotas,
        checker: bodies,
        tracer,
      });
      const issuer = new TokenIssuer(store, keyring, () => config.authIssuer ?? url, config.authAudience);
      const listener = createRequestListener({
        jsonChecker: bodies,
        context: {
          store,
          intake,
          ...engineServices({
            store,
            queue,
            compile,
            keyring,
            http: outbound,
            intake,
            schedules,
            tenantLimits,
            destinationKinds: { types: destinationTypes, subscribers: webhookSubscribers, baseUrl: () => url },
          }),
          queues: new QueueAdmin(queue, [schedules.queue]),
          keyring,
          compile,
          maintenance,
          webhookSubscribers,
          destinationTypes,
          testRunner: new TestRunner({
            store,
            actions: new ActionRunner(store, compile.sandbox),
            keyring,
            logger,
            http: outbound,
            maxOutputBytes: config.maxStepOutputBytes,
          }),
          baseUrl: () => url,
          build: { version: VERSION, commit: buildCommit(config.buildCommit) },
        },
        issuer,
        verifier,
        logger,
        bodyLimitBytes: config.bodyLimitBytes,
        readiness: () => readiness(store, queue, maintenance, eventLoop, config, logger),
        queues,
        adapterWaitMs: config.adapterWaitMs,
        replyWaitMs: config.replyWaitMs,
        metrics,
        clients,
        apiCalls: new ApiCallLimit(
          rateLimiter,
          { perSecond: config.tenantApiCallsPerSecond, burst: config.tenantApiCallBurst },
          logger,
        ),
        trustProxy: trustProxySetting(config.trustProxy),
        tracer,
      });
      server = http.createServer(listener);
      await new Promise<void>((resolve, reject) =>
        server!.once('error', reject).listen(config.port, config.host, resolve),
      );
      url = baseUrl(config, (server.address() as { port: number }).port);
    }
    if (lock) adminSocket = await serveAdminSocket(storeAdmin(store), config.dataDir);
    // A worker without the API exports its metrics on a port of its own, when one is set.
    const metricsServer =
      !roles.api && config.metricsPort !== undefined
        ? await serveMetrics(metrics, clients, verifier, config)
        : undefined;
    return new Platform(config, store, queue, logger, url, {
      worker,
      ticks,
      reconciler,
      recovery,
      replays,
      alerts,
      logPruning,
      schedules,
      sandbox: compile.sandbox,
      server,
      adminSocket,
      metricsServer,
      redis,
      redisChild,
      lock,
      eventLoop,
      bodies,
      tracing,
    });
  }

  /** Where the API listens on this machine: what a proxy in front of PUBLIC_URL forwards to. */
  get localUrl(): string | undefined {
    const address = this.parts.server?.address();
    if (!address || typeof address !== 'object') return undefined;
    const everyInterface = this.config.host === '0.0.0.0' || this.config.host === '::';
    return `http://${everyInterface ? '127.0.0.1' : this.config.host}:${address.port}`;
  }

  /** The Redis (or Redis Cluster) this process runs on. */
  get redis(): RedisTarget {
    return this.parts.redis;
  }

  /** The job schedulers of scheduled flows. */
  get schedules(): FlowSchedules {
    return this.parts.schedules;
  }

  /** Graceful stop: no new requests or jobs, in-flight work finished (or released after the grace period). */
  async close() {
    const {
      worker,
      ticks,
      reconciler,
      recovery,
      replays,
      alerts,
      logPruning,
      schedules,
      sandbox,
      server,
      adminSocket,
      metricsServer,
      redis,
      redisChild,
      lock,
      eventLoop,
      bodies,
      tracing,
    } = this.parts;
    eventLoop.close();
    clearInterval(logPruning);
    await Promise.all([closeServer(server), closeServer(adminSocket), closeServer(metricsServer)]);
    await bodies.close();
    await ticks?.close();
    await recovery?.close();
    await replays?.close();
    await alerts?.close();
    await reconciler?.close();
    await worker?.close(this.config.shutdownGraceMs);
    await Promise.all([this.queue.close(), schedules.close()]);
    redis.close();
    sandbox.close();
    await this.store.close();
    await stopEmbeddedRedis(redisChild);
    lock?.release();
    // Last: the spans of everything above are sent.
    await tracing?.shutdown();
  }
}

const roleName = (roles: Roles) => (roles.api && roles.worker ? 'serve' : roles.api ? 'api' : 'worker');

/**
 * Every hour (every worker does: a second sweep finds nothing left to do): makes the partitions of the week
 * ahead, drops history past its retention, and deletes run log lines and alerts sent past theirs.
 */
function pruneHourly(
  store: LogStore & AlertStore & RetentionStore,
  retentionDays: number,
  logger: Logger,
): NodeJS.Timeout {
  const prune = async () => {
    const now = Date.now();
    const before = new Date(now - retentionDays * 86_400_000).toISOString();
    await store.preparePartitions(now, now + PARTITIONS_AHEAD_MS);
    const history = await store.pruneExpired(now);
    const [lines, alerts] = await Promise.all([store.pruneRunLogs(before), store.pruneAlerts(before)]);
    if (history.partitionsDropped + history.rowsDeleted + lines + alerts > 0)
      logger.info({ ...history, lines, alerts }, 'pruned history, run log lines and alerts past their retention');
  };
  const sweep = () => void prune().catch((error) => logger.warn({ err: error }, 'could not prune history'));
  sweep();
  return setInterval(sweep, 3_600_000).unref();
}

/** `GET /metrics` alone, for operators (Basic with an operator client, or an operator token). */
async function serveMetrics(
  metrics: PrometheusMetrics,
  clients: ClientAuthenticator,
  verifier: TokenVerifier,
  config: Config,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const answer = async () => {
      if (req.method !== 'GET' || req.url !== '/metrics') return void res.writeHead(404).end();
      const address = req.socket.remoteAddress ?? '';
      if (!(await isOperatorAuthorization(clients, verifier, req.headers.authorization, address))) {
        return void res
          .writeHead(401, { 'WWW-Authenticate': 'Basic realm="Tributary operators", charset="UTF-8"' })
          .end();
      }
      res.writeHead(200, { 'content-type': metrics.contentType }).end(await metrics.render());
    };
    answer().catch((error: unknown) =>
      error instanceof HttpProblem ? res.writeHead(error.status, error.extra.headers).end() : res.writeHead(503).end(),
    );
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(config.metricsPort, config.host, resolve),
  );
  return server;
}

function closeServer(server: http.Server | undefined) {
  if (!server) return Promise.resolve();
  server.closeIdleConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * Whether this process can serve: the store and Redis answer, Redis keeps its keys, and this
 * process's event loop is not held up. What the queue looks like (live workers, the oldest job
 * waiting for a worker, a recovery from lost Redis data, maintenance) is reported, not judged: a
 * tenant's backlog or a stopped worker must not take every API host out of a load balancer.
 */
async function readiness(
  store: Store,
  queue: RunQueue,
  maintenance: MaintenanceMode,
  eventLoop: EventLoopLag,
  config: Config,
  logger: Logger,
): Promise<Readiness> {
  const checks: Record<string, unknown> = {};
  const failed: string[] = [];
  const problems: string[] = [];
  try {
    await store.ping();
    checks.store = 'ok';
  } catch (error) {
    // The driver's message (host, user, database) goes to the log, for operators, never into the answer.
    logger.warn({ err: error }, 'readiness: the store does not answer');
    checks.store = 'unreachable';
    failed.push('store');
    problems.push('the store does not answer');
  }
  try {
    const report = await inspectQueue(queue.queue, config.redisPrefix);
    Object.assign(checks, report);
    const current = await maintenance.current();
    if (current) checks.maintenance = current;
    if (report.cluster && report.cluster.state !== 'ok') {
      failed.push('redis cluster');
      problems.push(`the Redis Cluster's state is ${report.cluster.state}: some slots have no master`);
    }
    if (/^(allkeys|volatile)-/.test(report.maxmemoryPolicy)) {
      failed.push('redis eviction');
      problems.push(`Redis evicts keys (maxmemory-policy ${report.maxmemoryPolicy}); BullMQ needs noeviction`);
    }
  } catch (error) {
    logger.warn({ err: error }, 'readiness: Redis does not answer');
    checks.redis = 'unreachable';
    failed.push('redis');
    problems.push('Redis does not answer');
  }
  checks.eventLoopLagMs = eventLoop.p99Ms;
  if (eventLoop.p99Ms > config.readyMaxEventLoopLagMs) {
    failed.push('event loop');
    problems.push(`this process's event loop lags ${eventLoop.p99Ms} ms (p99 over the last few seconds)`);
  }
  if (problems.length > 0) checks.problems = problems;
  return { ready: failed.length === 0, failed, checks };
}

/** The p99 delay of this process's event loop over the last window of a few seconds. */
class EventLoopLag {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  p99Ms = 0;

  constructor(windowMs = 5000) {
    this.histogram.enable();
    this.timer = setInterval(() => {
      this.p99Ms = Math.round(this.histogram.percentile(99) / 1e6);
      this.histogram.reset();
    }, windowMs).unref();
  }

  close() {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}

/** TRUST_PROXY as Express takes it: a boolean, a number of hops, or addresses and subnets. */
function trustProxySetting(text: string): boolean | number | string {
  if (text === 'true' || text === 'false') return text === 'true';
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** The settings' limits on what each tenant keeps (0: none), for the store to enforce. */
function stateLimits(config: Config): StateLimit[] {
  const limit = (kind: StateKind, items: [number, string], bytes?: [number, string]): StateLimit => ({
    kind,
    maxItems: items[0] || null,
    itemsSetting: items[1],
    maxBytes: bytes?.[0] || null,
    bytesSetting: bytes?.[1] ?? null,
  });
  return [
    limit('flows', [config.tenantMaxFlows, 'TENANT_MAX_FLOWS'], [config.tenantMaxFlowBytes, 'TENANT_MAX_FLOW_BYTES']),
    limit(
      'variables',
      [config.tenantMaxVariables, 'TENANT_MAX_VARIABLES'],
      [config.tenantMaxVariableBytes, 'TENANT_MAX_VARIABLE_BYTES'],
    ),
    limit('secrets', [config.tenantMaxSecrets, 'TENANT_MAX_SECRETS']),
    limit('action versions', [config.tenantMaxActionVersions, 'TENANT_MAX_ACTION_VERSIONS']),
    limit('destinations', [config.tenantMaxDestinations, 'TENANT_MAX_DESTINATIONS']),
    limit('data spaces', [config.tenantMaxDataSpaces, 'TENANT_MAX_DATA_SPACES']),
    limit(
      'documents',
      [config.tenantMaxDocuments, 'TENANT_MAX_DOCUMENTS'],
      [config.tenantMaxDocumentBytes, 'TENANT_MAX_DOCUMENT_BYTES'],
    ),
  ];
}
