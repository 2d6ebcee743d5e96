import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { Router, type Request, type Response } from 'express';
import { unstorableStrings } from '../../engine/model/index.ts';
import { LRUCache } from 'lru-cache';
import { isRunQueue, type RunJobData } from '../../engine/queue/index.ts';
import type { Client, FlowStore } from '../../engine/store/index.ts';
import { OPERATOR_RUNS_PATH } from './run-page.ts';
import type { ClientAuthenticator, DashboardSessions } from '../auth/index.ts';
import { HttpProblem } from '../http/index.ts';

export const DASHBOARD_PATH = '/admin/queues';
export const SIGN_IN_PATH = '/admin/sign-in';
const SIGN_OUT_PATH = '/admin/sign-out';
const LOGO_PATH = '/admin/tributary.svg';

/** Three streams joining: the mark of the dashboard and its tab. */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d4f91"/>
<path d="M6 7c5 0 7 5 10 9M16 4v12M26 7c-5 0-7 5-10 9v12" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/></svg>`;

/**
 * An operators' page calls out to no other host (it must work where the network is closed, and tell no
 * one who looks at it): scripts, styles, fonts, images and requests come from this server only.
 */
const SELF_ONLY = "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; frame-ancestors 'none'";

/** bull-board's page loads its fonts from Google; the stylesheet's own fallbacks serve instead. */
const OUTSIDE_FONTS = /<link[^>]*fonts\.googleapis\.com[^>]*>\s*/g;

type RenderFile = (file: string, options: object, done: (error: Error | null, html?: string) => void) => void;

/**
 * bull-board over every queue, for operators only (see operatorGuard), branded, with sign-out and the API
 * reference. A run's job names its tenant, flow and run, and links to the run's page.
 */
export function dashboardRoutes(queues: Queue[], flows: Pick<FlowStore, 'getFlow'>): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const flowKeys = new FlowKeys(flows);
  createBullBoard({
    queues: queues.map((queue) => {
      if (!isRunQueue(queue.name)) return new BullMQAdapter(queue);
      const adapter = new BullMQAdapter(queue, {
        externalJobUrl: (job) => {
          const { tenantId, runId } = job.data as RunJobData;
          return { displayText: 'Run page', href: `${OPERATOR_RUNS_PATH}/${tenantId}/${runId}` };
        },
      });
      adapter.setFormatter('name', (job: { data: RunJobData }) => {
        const { tenantId, flowId, flowVersion, runId } = job.data;
        // The ids' last characters: their first are the time they were made (UUIDv7), alike for a minute's runs.
        const flow = flowKeys.keyOf(tenantId, flowId) ?? `flow …${flowId.slice(-8)}`;
        return `${tenantId} · ${flow} v${flowVersion} · run …${runId.slice(-8)}`;
      });
      return adapter;
    }),
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'Tributary queues',
        boardLogo: { path: LOGO_PATH, width: 28, height: 28 },
        favIcon: { default: LOGO_PATH, alternative: LOGO_PATH },
        hideDocsLink: true,
        miscLinks: [
          { text: 'API reference', url: '/docs' },
          { text: 'Sign out', url: SIGN_OUT_PATH },
        ],
      },
    },
  });
  // Express keeps its template engines by extension; bull-board's renders the page, without the link.
  const app = serverAdapter.getRouter() as express.Application & { engines: Record<string, RenderFile> };
  const render = app.engines['.ejs'];
  app.engine('ejs', (file, options, done) =>
    render(file, options, (error, html) => done(error, html?.replace(OUTSIDE_FONTS, ''))),
  );
  const router = Router();
  router.use((_req, res, next) => {
    res.set('Content-Security-Policy', SELF_ONLY);
    next();
  });
  router.use(app);
  return router;
}

/**
 * A sign-in page for the dashboard: an operator client's id and secret open a dashboard session, kept in an
 * HttpOnly, SameSite=Strict cookie (DashboardSessions). Browsers refuse the page's own requests when credentials
 * ride in the URL, and a Basic prompt cannot be signed out of; the cookie can.
 */
export function dashboardSignIn(clients: ClientAuthenticator, sessions: DashboardSessions): Router {
  const router = Router();
  router.get(SIGN_IN_PATH, (_req, res) => void signInPage(res, 200));
  router.get(LOGO_PATH, (_req, res) => void res.type('svg').set('Cache-Control', 'public, max-age=86400').send(LOGO));
  router.post(
    SIGN_IN_PATH,
    express.urlencoded({ extended: false, limit: '4kb' }),
    async (req: Request, res: Response) => {
      const { client_id: clientId, client_secret: clientSecret } = (req.body ?? {}) as Record<string, unknown>;
      let client: Client | undefined;
      try {
        client =
          typeof clientId === 'string' &&
          typeof clientSecret === 'string' &&
          clientId.length <= 200 &&
          clientSecret.length <= 200 &&
          // Text the store cannot hold (NUL, a lone surrogate) names no client.
          unstorableStrings([clientId, clientSecret]).length === 0
            ? await clients.authenticate(clientId, clientSecret, req.ip ?? '')
            : undefined;
      } catch (error) {
        if (!(error instanceof HttpProblem && error.status === 429)) throw error;
        const retryAfter = error.extra.headers?.['Retry-After'] ?? '60';
        res.set('Retry-After', retryAfter);
        return void signInPage(res, 429, `Too many failed sign-ins: try again in ${retryAfter} seconds.`);
      }
      if (!client?.operator)
        return void signInPage(
          res,
          401,
          client ? 'This client is not an operator client.' : 'Unknown client or wrong secret.',
        );
      sessions.start(res, client.clientId);
      res.redirect(303, DASHBOARD_PATH);
    },
  );
  router.get(SIGN_OUT_PATH, (_req, res) => {
    sessions.end(res);
    res.redirect(303, SIGN_IN_PATH);
  });
  return router;
}

/**
 * Flow keys for job cards, which bull-board names synchronously: a flow is looked up the first time a card
 * shows it (named by its id until the next refresh), then remembered; at most 10,000.
 */
class FlowKeys {
  private readonly keys = new LRUCache<string, string>({ max: 10_000 });
  private readonly loading = new Set<string>();

  constructor(private readonly flows: Pick<FlowStore, 'getFlow'>) {}

  keyOf(tenantId: string, flowId: string): string | undefined {
    const id = `${tenantId}\0${flowId}`;
    const key = this.keys.get(id);
    if (key === undefined && !this.loading.has(id)) {
      this.loading.add(id);
      this.flows
        .getFlow(tenantId, flowId)
        .then((flow) => flow && this.keys.set(id, flow.key))
        .catch(() => {})
        .finally(() => this.loading.delete(id));
    }
    return key;
  }
}

function signInPage(res: Response, status: number, error?: string) {
  res
    .status(status)
    .set('Cache-Control', 'no-store')
    .type('html')
    .send(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Tributary operators: sign in</title><meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem;color:#222}
label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}
button{margin-top:1rem;padding:.4rem 1rem;font:inherit}.error{color:#a33}</style></head>
<body><h1>Queue dashboard</h1>
<p>Sign in with an operator client (<code>npx tributary client create --operator</code>).</p>
${error ? `<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="${SIGN_IN_PATH}">
<label for="client_id">Client id</label><input id="client_id" name="client_id" autocomplete="username" required>
<label for="client_secret">Client secret</label>
<input id="client_secret" name="client_secret" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>
<p><small>Signed in for 24 hours; <a href="${SIGN_OUT_PATH}">sign out</a> ends it.</small></p></body></html>`);
}
