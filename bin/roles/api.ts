import http from 'node:http';
import { createRequestListener } from '../../api/app.ts';
import { ApiCallLimit, TokenIssuer } from '../../api/auth/index.ts';
import { Intake, JsonChecker } from '../../engine/intake/index.ts';
import { ActionRunner } from '../../engine/plugins/index.ts';
import { QueueAdmin } from '../../engine/queue/index.ts';
import { CompiledFlowCache, TestRunner } from '../../engine/runtime/index.ts';
import { engineServices } from '../../engine/services/index.ts';
import { buildCommit } from '../build.ts';
import { baseUrl } from '../config/config.ts';
import { type EventLoopLag, readiness } from '../readiness.ts';
import type { SharedParts } from './shared.ts';
import { VERSION } from '../version.ts';

/** An API role: the flow URLs and the HTTP API on one server, over the engine's services. */
export class ApiRole {
  private constructor(
    readonly server: http.Server,
    /** Checks large webhook bodies off the event loop. */
    private readonly bodies: JsonChecker,
  ) {}

  static async start(shared: SharedParts, eventLoop: EventLoopLag): Promise<ApiRole> {
    const { config, logger, store, queue, compile, keyring, schedules, maintenance, tracer } = shared;
    const { destinationTypes, webhookSubscribers, routes: familyRoutes } = shared.families;
    const bodies = new JsonChecker();
    const intake = new Intake({
      store,
      queue,
      flows: new CompiledFlowCache(store, compile),
      keyring,
      cacheTtlMs: config.intakeCacheTtlMs,
      cacheEntries: config.intakeCacheEntries,
      maintenance,
      metrics: shared.metrics,
      topicHeaders: compile.registry.topicHeaders(),
      quotas: shared.quotas,
      checker: bodies,
      tracer,
    });
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
          http: shared.outbound,
          intake,
          schedules,
          tenantLimits: shared.tenantLimits,
          destinationKinds: { types: destinationTypes, subscribers: webhookSubscribers, baseUrl: shared.url },
          testRunner: testRunner(shared),
        }),
        queues: new QueueAdmin(queue, [schedules.queue]),
        moves: shared.moves,
        keyring,
        compile,
        maintenance,
        webhookSubscribers,
        destinationTypes,
        familyRoutes,
        baseUrl: shared.url,
        build: { version: VERSION, commit: buildCommit(config.buildCommit) },
      },
      issuer: new TokenIssuer(store, keyring, () => config.authIssuer ?? shared.url(), config.authAudience),
      verifier: shared.verifier,
      logger,
      bodyLimitBytes: config.bodyLimitBytes,
      readiness: () => readiness(store, queue, maintenance, eventLoop, config, logger),
      queues: [...queue.queues, schedules.queue],
      adapterWaitMs: config.adapterWaitMs,
      replyWaitMs: config.replyWaitMs,
      metrics: shared.metrics,
      clients: shared.clients,
      apiCalls: new ApiCallLimit(
        shared.rateLimiter,
        { perSecond: config.tenantApiCallsPerSecond, burst: config.tenantApiCallBurst },
        logger,
      ),
      trustProxy: trustProxySetting(config.trustProxy),
      tracer,
    });
    const server = http.createServer(listener);
    try {
      await new Promise<void>((resolve, reject) =>
        server.once('error', reject).listen(config.port, config.host, resolve),
      );
    } catch (error) {
      await bodies.close();
      throw error;
    }
    shared.setUrl(baseUrl(config, (server.address() as { port: number }).port));
    return new ApiRole(server, bodies);
  }

  async close() {
    await closeServer(this.server);
    await this.bodies.close();
  }
}

/** Runs drafts for the Test API, on the API's store, recording nothing. */
function testRunner({ store, compile, keyring, logger, outbound, config }: SharedParts): TestRunner {
  return new TestRunner({
    store,
    actions: new ActionRunner(store, compile.sandbox),
    keyring,
    logger,
    http: outbound,
    maxOutputBytes: config.maxStepOutputBytes,
    recordExchanges: config.recordExchanges === 'all',
  });
}

/** No new connections; idle ones closed now, busy ones once their answer is sent. */
export function closeServer(server: http.Server | undefined) {
  if (!server) return Promise.resolve();
  server.closeIdleConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** TRUST_PROXY as Express takes it: a boolean, a number of hops, or addresses and subnets. */
function trustProxySetting(text: string): boolean | number | string {
  if (text === 'true' || text === 'false') return text === 'true';
  return /^\d+$/.test(text) ? Number(text) : text;
}
