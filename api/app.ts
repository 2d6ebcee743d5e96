import type { Queue } from 'bullmq';
import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import type { JsonChecker } from '../engine/intake/index.ts';
import type { Tracer } from '../engine/telemetry/index.ts';
import {
  type TokenIssuer,
  DashboardSessions,
  isOperatorAuthorization,
  operatorGuard,
  type ClientAuthenticator,
  type ApiCallLimit,
  type TokenVerifier,
  RUN_PAGES_PATH,
  RunPageLinks,
  tokenRoutes,
} from './auth/index.ts';
import type { ApiContext } from './context.ts';
import type { FamilyRoutePlatform } from '../engine/plugins/index.ts';
import {
  familyRoutePlatform,
  familyTenantRoutes,
  publicFamilyRoutes,
  publicRoutePaths,
} from './family-routes/index.ts';
import {
  dashboardRoutes,
  dashboardSignIn,
  DASHBOARD_PATH,
  SIGN_IN_PATH,
  renderDocs,
  runPageRoutes,
} from './pages/index.ts';
import { namedKinds } from '../engine/nodes/index.ts';
import {
  operationInfos,
  metadataRoutes,
  batchRoutes,
  destinationRoutes,
  incrementalFieldRoutes,
  editableFlowRoutes,
  flowFileRoutes,
  flowRoutes,
  runRoutes,
  secretRoutes,
  variableRoutes,
  blockedTopicRoutes,
  messageRoutes,
  replayRoutes,
  alertRoutes,
  dataSpaceRoutes,
  logRoutes,
  actionRoutes,
  testRunRoutes,
  platformRoutes,
  platformValueRoutes,
  statisticsRoutes,
  userSettingsRoutes,
  queueRoutes,
  tenantRoutes,
  environmentRoutes,
  versionRoutes,
} from './routes/index.ts';
import { hookHandler } from './flow-url/index.ts';
import { jsonBodies, requestLog, HttpProblem, problemHandler } from './http/index.ts';
import { openApiDocument } from './openapi/index.ts';
import { mountRoutes, type RouteSpec } from './route-kit/index.ts';

export interface Readiness {
  ready: boolean;
  /** What keeps this process from serving, by name only: `store`, `redis`, `redis eviction`, `event loop`. */
  failed: string[];
  /** The details, for operators: what each check found, the queue, maintenance, a recovery. */
  checks: Record<string, unknown>;
}

export interface AppOptions {
  context: ApiContext;
  issuer: TokenIssuer;
  verifier: TokenVerifier;
  logger: Logger;
  /** Largest request body accepted (API and flow URLs); over it: 413. */
  bodyLimitBytes: number;
  /** Checks large JSON bodies off the event loop (API and flow URLs). */
  jsonChecker: JsonChecker;
  readiness: () => Promise<Readiness>;
  /** Queues the operator dashboard shows. */
  queues: Queue[];
  /** How long a family's route waits for a run it started (ADAPTER_WAIT_MS). */
  adapterWaitMs: number;
  /** How long a flow URL waits for its run's reply (REPLY_WAIT_MS). */
  replyWaitMs: number;
  /** This process's metrics, in Prometheus' text format. */
  metrics: MetricsExposition;
  /** Client sign-ins, throttled on repeated failures. */
  clients: ClientAuthenticator;
  apiCalls: ApiCallLimit;
  /** Express' `trust proxy`: whose X-Forwarded-For names the caller's address. */
  trustProxy: boolean | number | string;
  /** Spans of deliveries at flow URLs. */
  tracer: Tracer;
}

export interface MetricsExposition {
  contentType: string;
  render(): Promise<string>;
}

export function apiRoutes(context: ApiContext, families: FamilyRoutePlatform): RouteSpec[] {
  return [
    ...editableFlowRoutes(context),
    ...flowFileRoutes(context),
    ...flowRoutes(context),
    ...variableRoutes(context),
    ...secretRoutes(context),
    ...runRoutes(context),
    ...destinationRoutes(context),
    ...familyTenantRoutes(context.familyRoutes, families),
    ...batchRoutes(context),
    ...incrementalFieldRoutes(context),
    ...metadataRoutes(context),
    ...tenantRoutes(context),
    ...environmentRoutes(context),
    ...messageRoutes(context),
    ...blockedTopicRoutes(context),
    ...replayRoutes(context),
    ...alertRoutes(context),
    ...queueRoutes(context),
    ...versionRoutes(context),
    ...platformRoutes(context),
    ...statisticsRoutes(context),
    ...userSettingsRoutes(context),
    ...platformValueRoutes(context),
    ...dataSpaceRoutes(context),
    ...logRoutes(context),
    ...testRunRoutes(context),
    ...actionRoutes(context),
  ];
}

/** The HTTP surface: flow URLs first, on node:http (see hookHandler), then the Express app. */
export function createRequestListener(options: AppOptions): RequestListener {
  const hooks = hookHandler(options.context.intake, {
    bodyLimitBytes: options.bodyLimitBytes,
    runs: options.context.store,
    replyWaitMs: options.replyWaitMs,
    logger: options.logger,
    tracer: options.tracer,
  });
  const app = createApp(options);
  return (req, res) => {
    if (!hooks(req, res)) app(req, res);
  };
}

/** Everything but the flow URLs: thin routes over the engine. */
function createApp(options: AppOptions): Express {
  const { context, logger, bodyLimitBytes } = options;
  const families = familyRoutePlatform(context, options.adapterWaitMs, logger);
  const routes = apiRoutes(context, families);
  const openapi = openApiDocument(routes, context.build.version, publicRoutePaths(context.familyRoutes));
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(requestLog(logger, new Set(['/healthz', '/readyz']), [RUN_PAGES_PATH]));

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (req, res) => {
    const readiness = await options.readiness();
    // Anyone may ask (load balancers do): what failed is all they learn; operators get the details.
    const authorization = req.get('authorization');
    const operator =
      authorization !== undefined &&
      (await isOperatorAuthorization(options.clients, options.verifier, authorization, req.ip ?? '').catch(
        () => false,
      ));
    const { ready, failed } = readiness;
    res.status(ready ? 200 : 503).json(operator ? readiness : { ready, failed });
  });
  app.get('/openapi.json', (_req, res) => void res.json(openapi));
  const docs = renderDocs(
    openapi,
    operationInfos(context.compile.registry),
    context.compile.registry.listSignatures(),
    namedKinds(),
  );
  app.get('/docs', (_req, res) => void res.type('html').send(docs));
  // The address the start banner prints: people who open it want the reference.
  app.get('/', (_req, res) => void res.redirect(302, '/docs'));
  app.use(tokenRoutes(options.clients, options.issuer, context.baseUrl));
  app.use(publicFamilyRoutes(context.familyRoutes, families, bodyLimitBytes));
  const operatorsOnly = operatorGuard(options.clients, options.verifier);
  const sessions = new DashboardSessions(context.keyring, context.store, context.baseUrl);
  app.use(dashboardSignIn(options.clients, sessions));
  const signedInOperators = operatorGuard(options.clients, options.verifier, sessions, SIGN_IN_PATH);
  app.use(DASHBOARD_PATH, signedInOperators, dashboardRoutes(options.queues, context.store));
  app.use(
    runPageRoutes(
      { store: context.store, runs: context.runs, links: new RunPageLinks(context.keyring) },
      signedInOperators,
    ),
  );
  app.get(
    '/metrics',
    operatorsOnly,
    async (_req, res) => void res.type(options.metrics.contentType).send(await options.metrics.render()),
  );
  app.use('/api', jsonBodies(bodyLimitBytes, options.jsonChecker));
  app.use(mountRoutes(routes, options.verifier, context.store, options.apiCalls));
  app.use((req, _res, next) => next(new HttpProblem(404, 'Not found', `no route ${req.method} ${req.path}`)));
  app.use(problemHandler(logger));
  return app;
}
