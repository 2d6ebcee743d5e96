import type { ChildProcess } from 'node:child_process';
import type http from 'node:http';
import type { Logger } from 'pino';
import type { OperationFamily } from '../engine/plugins/index.ts';
import type { FlowSchedules, RunQueue } from '../engine/queue/index.ts';
import type { Store } from '../engine/store/index.ts';
import { noTracer } from '../engine/telemetry/index.ts';
import { serveAdminSocket, storeAdmin } from './admin.ts';
import type { Config } from './config/config.ts';
import { createLogger } from './logger.ts';
import { serveMetrics } from './metrics-server.ts';
import { EventLoopLag } from './readiness.ts';
import { printableUrl, redisAnswers, RedisTarget, startEmbeddedRedis, stopEmbeddedRedis } from './redis.ts';
import { ApiRole, closeServer } from './roles/api.ts';
import { assembleShared, type SharedParts } from './roles/shared.ts';
import { WorkerRole } from './roles/worker.ts';
import { startTracing, type Tracing, type TracingEnv, tracingSettings } from './tracing.ts';
import { VERSION } from './version.ts';

export { createLogger } from './logger.ts';
export { openStore } from './open-store.ts';
export { VERSION } from './version.ts';

export interface Roles {
  api: boolean;
  worker: boolean;
  /** Start redis-server as a child when nothing answers at REDIS_URL (the one-process `serve`). */
  embeddedRedis?: boolean;
}

/** What a process runs besides its shared parts. */
interface Running {
  api?: ApiRole;
  worker?: WorkerRole;
  adminSocket?: http.Server;
  metricsServer?: http.Server;
  eventLoop: EventLoopLag;
  redis: RedisTarget;
  redisChild?: ChildProcess;
  tracing?: Tracing;
}

/** A running Tributary: API, worker, or both, over one store and one Redis. */
export class Platform {
  private constructor(
    private readonly shared: SharedParts,
    private readonly running: Running,
  ) {}

  static async start(
    config: Config,
    roles: Roles,
    options: {
      logger?: Logger;
      /** The operation families (operations/index.ts's unless given: a test adds one). */
      families?: OperationFamily[];
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
    const eventLoop = new EventLoopLag();
    try {
      const shared = await assembleShared(config, redis, {
        families: options.families,
        logger,
        tracer: tracing?.tracer ?? noTracer,
      });
      const worker = roles.worker ? await WorkerRole.start(shared, redis, roles.api) : undefined;
      const api = roles.api ? await ApiRole.start(shared, eventLoop) : undefined;
      const adminSocket = shared.lock && (await serveAdminSocket(storeAdmin(shared.store), config.dataDir));
      // A worker without the API exports its metrics on a port of its own, when one is set.
      const metricsServer =
        !api && config.metricsPort !== undefined
          ? await serveMetrics(shared.metrics, shared.clients, shared.verifier, config)
          : undefined;
      return new Platform(shared, { api, worker, adminSocket, metricsServer, eventLoop, redis, redisChild, tracing });
    } catch (error) {
      eventLoop.close();
      redis.close();
      // A start that fails (a port taken, a store that cannot open) leaves no redis-server behind.
      await stopEmbeddedRedis(redisChild);
      await tracing?.shutdown();
      throw error;
    }
  }

  get config(): Config {
    return this.shared.config;
  }

  get store(): Store {
    return this.shared.store;
  }

  get queue(): RunQueue {
    return this.shared.queue;
  }

  get logger(): Logger {
    return this.shared.logger;
  }

  /** Where clients reach this process (PUBLIC_URL, else the port it listens on). */
  get url(): string {
    return this.shared.url();
  }

  /** Where the API listens on this machine: what a proxy in front of PUBLIC_URL forwards to. */
  get localUrl(): string | undefined {
    const address = this.running.api?.server.address();
    if (!address || typeof address !== 'object') return undefined;
    const everyInterface = this.config.host === '0.0.0.0' || this.config.host === '::';
    return `http://${everyInterface ? '127.0.0.1' : this.config.host}:${address.port}`;
  }

  /** The Redis (or Redis Cluster) this process runs on. */
  get redis(): RedisTarget {
    return this.running.redis;
  }

  /** The job schedulers of scheduled flows. */
  get schedules(): FlowSchedules {
    return this.shared.schedules;
  }

  /** Graceful stop: no new requests or jobs, in-flight work finished (or released after the grace period). */
  async close() {
    const { api, worker, adminSocket, metricsServer, eventLoop, redis, redisChild, tracing } = this.running;
    eventLoop.close();
    await Promise.all([api?.close(), closeServer(adminSocket), closeServer(metricsServer)]);
    await worker?.close(this.config.shutdownGraceMs);
    await Promise.all([this.queue.close(), this.schedules.close()]);
    redis.close();
    this.shared.compile.sandbox.close();
    await this.store.close();
    await stopEmbeddedRedis(redisChild);
    this.shared.lock?.release();
    // Last: the spans of everything above are sent.
    await tracing?.shutdown();
  }
}

const roleName = (roles: Roles) => (roles.api && roles.worker ? 'serve' : roles.api ? 'api' : 'worker');
