import { type RequestHandler, Router, type Response } from 'express';
import { ConflictError, type FlowDocument, type Run, type Step } from '../../engine/model/index.ts';
import { isTerminal, type FlowStore, type RunStore } from '../../engine/store/index.ts';
import { parseTraceparent } from '../../engine/telemetry/index.ts';
import type { RunService } from '../../engine/services/index.ts';
import { escapeHtml } from './html.ts';
import { graphSvg, type NodeDoc, type Shown, STATUS_COLORS } from './run-graph.ts';
import { RUN_PAGES_PATH, type RunPageGrant, type RunPageLinks } from '../auth/index.ts';

export const OPERATOR_RUNS_PATH = '/admin/runs';

/** The most of one node's output the page shows; the API has all of it. */
const SHOWN_OUTPUT_CHARS = 20_000;
/** What the page shows: the run, its checkpoints, the flow version it ran, its trace. */
interface RunView {
  run: Run;
  steps: Step[];
  flow: FlowDocument | undefined;
  traceId: string | undefined;
}

async function loadRun(store: RunStore & FlowStore, tenantId: string, runId: string): Promise<RunView | undefined> {
  const found = await store.getRun(tenantId, runId);
  if (!found) return undefined;
  const version = await store.getFlowVersion(tenantId, found.run.flowId, found.run.flowVersion);
  return {
    run: found.run,
    steps: found.steps,
    flow: version?.document,
    traceId: parseTraceparent(found.traceparent)?.traceId,
  };
}

/**
 * A run as a page: for operators under the signed-in dashboard (`/admin/runs/<tenant>/<run>`, linked from
 * each job of the runs queue), and for a tenant through a signed link the API hands out
 * (`POST /api/v1/runs/{id}/page-link`). Both can replay the run's message from it.
 */
export function runPageRoutes(
  context: { store: RunStore & FlowStore; runs: RunService; links: RunPageLinks },
  operatorGuard: RequestHandler,
): Router {
  const { store, runs, links } = context;
  const router = Router();

  /** Shows a run; `pageOf` makes the address of another run's page (a call's, the caller's) for the same viewer. */
  const show = async (
    res: Response,
    tenantId: string,
    runId: string,
    pages: { replay: string | undefined; pageOf: (runId: string) => string },
    notice?: string,
  ) => {
    const view = await loadRun(store, tenantId, runId);
    if (!view) return void page(res, 404, 'No such run', '<p>There is no such run.</p>');
    page(res, notice ? 409 : 200, `Run of ${view.flow?.name ?? 'a flow'}`, renderRun(view, pages, notice));
  };
  const operatorPages = (tenantId: string, runId: string) => ({
    replay: `${OPERATOR_RUNS_PATH}/${enc(tenantId)}/${enc(runId)}/replay`,
    pageOf: (other: string) => `${OPERATOR_RUNS_PATH}/${enc(tenantId)}/${enc(other)}`,
  });
  // A signed page links others through links of the same grant: the same tenant, expiry and permission.
  const grantedPages = (grant: RunPageGrant, token: string) => ({
    replay: grant.canReplay ? `${RUN_PAGES_PATH}/${token}/replay` : undefined,
    pageOf: (other: string) => `${RUN_PAGES_PATH}/${links.token({ ...grant, runId: other })}`,
  });
  const replayed = async (tenantId: string, runId: string) => {
    const view = await store.getRun(tenantId, runId);
    if (!view) return undefined;
    try {
      return await runs.replay(tenantId, view.run.messageId);
    } catch (error) {
      if (error instanceof ConflictError) return error.message;
      throw error;
    }
  };

  router.get(`${OPERATOR_RUNS_PATH}/:tenantId/:runId`, operatorGuard, async (req, res) => {
    const { tenantId, runId } = req.params as Record<string, string>;
    await show(res, tenantId, runId, operatorPages(tenantId, runId));
  });
  // The dashboard's cookie is SameSite=Strict, but a browser sends remembered Basic credentials with any site's
  // form: only this site's pages may post here.
  router.post(`${OPERATOR_RUNS_PATH}/:tenantId/:runId/replay`, sameSiteOnly, operatorGuard, async (req, res) => {
    const { tenantId, runId } = req.params as Record<string, string>;
    const run = await replayed(tenantId, runId);
    if (typeof run === 'object') return void res.redirect(303, `${OPERATOR_RUNS_PATH}/${enc(tenantId)}/${run.id}`);
    await show(res, tenantId, runId, operatorPages(tenantId, runId), run);
  });

  const granted = (res: Response, token: string): RunPageGrant | undefined => {
    const grant = links.read(token);
    if (grant === 'expired')
      return void page(res, 410, 'Link expired', '<p>This link has expired: ask the API for a new one.</p>');
    if (!grant) return void page(res, 404, 'No such run', '<p>This link does not open a run.</p>');
    return grant;
  };
  router.get(`${RUN_PAGES_PATH}/:token`, async (req, res) => {
    const { token } = req.params as Record<string, string>;
    const grant = granted(res, token);
    if (grant) await show(res, grant.tenantId, grant.runId, grantedPages(grant, token));
  });
  // The token is the credential, in the path: a page that does not hold it cannot post here.
  router.post(`${RUN_PAGES_PATH}/:token/replay`, sameSiteOnly, async (req, res) => {
    const { token } = req.params as Record<string, string>;
    const grant = granted(res, token);
    if (!grant) return;
    if (!grant.canReplay) return void page(res, 403, 'Not allowed', '<p>This link does not allow a replay.</p>');
    const run = await replayed(grant.tenantId, grant.runId);
    if (typeof run === 'object')
      return void res.redirect(303, `${RUN_PAGES_PATH}/${links.token({ ...grant, runId: run.id })}`);
    await show(res, grant.tenantId, grant.runId, grantedPages(grant, token), run);
  });
  return router;
}

const enc = encodeURIComponent;

/**
 * Refuses a browser's request made by another site's page (Fetch Metadata, else the Origin's host against the
 * request's); programs send neither header and pass.
 */
const sameSiteOnly: RequestHandler = (req, res, next) => {
  const site = req.get('sec-fetch-site');
  const origin = req.get('origin');
  let crossSite = site !== undefined ? site !== 'same-origin' && site !== 'none' : false;
  if (site === undefined && origin !== undefined) {
    try {
      crossSite = new URL(origin).host !== req.get('host');
    } catch {
      crossSite = true;
    }
  }
  if (!crossSite) return next();
  page(res, 403, 'Not allowed', '<p>A replay is made from this page only, not from another site.</p>');
};

/** Self-contained: no script, nothing from another host; the link's token never leaves in a Referer. */
function page(res: Response, status: number, title: string, body: string) {
  res
    .status(status)
    .set({
      'Content-Security-Policy':
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
      'X-Robots-Tag': 'noindex',
    })
    .type('html')
    .send(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>${escapeHtml(title)} · Tributary</title><meta name="viewport" content="width=device-width,initial-scale=1">
<style>${STYLE}</style></head><body><main>${body}</main></body></html>`);
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:72rem;margin:0 auto;padding:1rem}h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:.8rem;color:#fff;font-size:.85rem;vertical-align:middle}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
code,pre{font:13px ui-monospace,monospace}pre{background:#fff;border:1px solid #ddd;padding:.5rem;overflow:auto;max-height:24rem;white-space:pre-wrap;overflow-wrap:anywhere}
.graph{background:#fff;border:1px solid #ddd;overflow-x:auto}.graph svg{display:block;max-width:100%;height:auto}
.graph.down{display:none}@media (max-width:600px){.graph.across{display:none}.graph.down{display:block}}
details{background:#fff;border:1px solid #ddd;margin:.4rem 0;padding:.3rem .6rem}summary{cursor:pointer}
.error{color:#b71c1c}.notice{background:#fff3e0;border:1px solid #ef6c00;padding:.5rem}
form{margin:1rem 0}button{font:inherit;padding:.3rem 1rem}table{border-collapse:collapse}td,th{padding:.1rem .6rem .1rem 0;text-align:left}
@media (max-width:600px){dl{grid-template-columns:1fr}dt{margin-top:.3rem}}`;

const badge = (status: string, label = status) =>
  `<span class="badge" style="background:${STATUS_COLORS[status] ?? '#616161'}">${escapeHtml(label)}</span>`;

/** An error's kind as the page says it: a retryable error that ended a node or a run is one whose retries ran out. */
const errorKind = (kind: string, ended: boolean) =>
  kind === 'retryable' && ended ? 'transient, retries used up' : kind;

const duration = (from: string | null, to: string | null) =>
  from && to ? `${Math.max(0, Date.parse(to) - Date.parse(from))} ms` : '—';

/** What a run waited for before it started, besides workers: its debounce period, its concurrency key's line. */
function startWaits(run: RunView['run']): string {
  const reasons = [
    run.debounce && `its debounce period (${run.debounce.periodMs} ms)`,
    run.concurrency && 'the runs of its concurrency key ahead of it',
  ].filter(Boolean);
  return reasons.length > 0 && run.startedAt ? ` (${reasons.join(', then ')})` : '';
}

function renderRun(
  { run, steps, flow, traceId }: RunView,
  { replay: replayAction, pageOf }: { replay: string | undefined; pageOf: (runId: string) => string },
  notice?: string,
): string {
  const nodes = flow?.nodes ?? [];
  const stepOf = new Map(steps.map((step) => [step.key, step]));
  const shownOf = (node: NodeDoc): Shown => ({
    status: stepOf.get(node.id)?.status ?? 'not run',
    items: failedItems(node, stepOf.get(node.id)),
  });
  const facts: Array<[string, string]> = [
    [
      'Flow',
      flow ? `${escapeHtml(flow.name)} (<code>${escapeHtml(flow.key)}</code>, version ${run.flowVersion})` : '—',
    ],
    ['Run', `<code>${run.id}</code>`],
    ['Message', `<code>${run.messageId}</code>`],
    // A wait, a call or a retry ends a pass and a later one goes on: passes are not retries.
    ['Passes', `${run.attempts} (a worker took the run up ${run.attempts === 1 ? 'once' : `${run.attempts} times`})`],
    ['Created', run.createdAt],
    ['Started', run.startedAt ?? '—'],
    ['Finished', run.finishedAt ?? '—'],
    ['Waited to start', `${duration(run.createdAt, run.startedAt)}${startWaits(run)}`],
    ['Took', duration(run.startedAt, run.finishedAt)],
    ['Trace', traceId ? `<code>${traceId}</code>` : 'not traced'],
  ];
  if (run.replayOf) facts.push(['Replays', `<code>${run.replayOf}</code>`]);
  if (run.budgetWaitMs > 0) facts.push(['Waited for outbound budgets', `${run.budgetWaitMs} ms`]);
  if (run.concurrency)
    facts.push(['Concurrency key', `<code>${escapeHtml(run.concurrency.key)}</code> (${run.concurrency.scope})`]);
  if (run.debouncedBy)
    facts.push([
      'Debounced by',
      `<a href="${escapeHtml(pageOf(run.debouncedBy))}"><code>${run.debouncedBy}</code></a>`,
    ]);
  if (run.parentRunId)
    facts.push(['Called by', `<a href="${escapeHtml(pageOf(run.parentRunId))}"><code>${run.parentRunId}</code></a>`]);
  if (run.error)
    facts.push([
      'Error',
      `<span class="error">${escapeHtml(errorKind(run.error.kind, isTerminal(run.status)))}${run.error.node ? ` in ${escapeHtml(run.error.node)}` : ''}: ${escapeHtml(run.error.message)}</span>`,
    ]);
  return `<h1>${escapeHtml(flow?.name ?? 'Run')} ${badge(run.status)}</h1>
${notice ? `<p class="notice" role="alert">Not replayed: ${escapeHtml(notice)}</p>` : ''}
<dl>${facts.map(([term, value]) => `<dt>${term}</dt><dd>${value}</dd>`).join('')}</dl>
${replayAction && isTerminal(run.status) ? `<form method="post" action="${escapeHtml(replayAction)}"><button type="submit">Replay this message</button></form>` : ''}
<h2>Graph</h2><div class="graph across">${graphSvg(nodes, flow?.edges ?? [], shownOf, 'across')}</div>
<div class="graph down">${graphSvg(nodes, flow?.edges ?? [], shownOf, 'down')}</div>
<h2>Nodes</h2>${nodes.map((node) => renderNode(node, steps, stepOf.get(node.id), pageOf)).join('')}`;
}

/** A loop's failed items, from its output: how many of how many, and how many an error path took. */
function failedItems(node: NodeDoc, step: Step | undefined): string | undefined {
  const output = step?.output as { results?: unknown; failed?: Array<{ handled?: boolean }> } | null | undefined;
  if (node.operation !== 'loop' || !Array.isArray(output?.results) || !Array.isArray(output.failed)) return undefined;
  const { failed, results } = output;
  if (failed.length === 0) return undefined;
  const handled = failed.filter((item) => item.handled).length;
  return `${failed.length} of ${results.length} items failed${handled > 0 ? `, ${handled} taken by an error path` : ''}`;
}

function renderNode(node: NodeDoc, steps: Step[], step: Step | undefined, pageOf: (runId: string) => string): string {
  const status = step?.status ?? 'not run';
  const items = failedItems(node, step);
  // A call's first checkpoint names the run it started.
  const called = (steps.find((other) => other.key === `${node.id}/call`)?.output as { runId?: unknown } | null)?.runId;
  // Checkpoints inside the node: its memoized sub-steps (`id/name`) and its loop items (`id[0].inner`).
  const inner = steps.filter((other) => other.key.startsWith(`${node.id}/`) || other.key.startsWith(`${node.id}[`));
  const shown = step && (step.status === 'succeeded' || step.output !== null) ? shownJson(step.output) : undefined;
  return `<details id="node-${escapeHtml(node.id)}"${status === 'failed' || status === 'waiting' || items ? ' open' : ''}>
<summary><strong>${escapeHtml(node.id)}</strong> · <code>${escapeHtml(node.operation)}</code> ${badge(status)}${items ? ` ${badge('handled', items)}` : ''}${step ? ` · ${step.attempts} attempt${step.attempts === 1 ? '' : 's'} · ${duration(step.startedAt, step.finishedAt)}` : ''}</summary>
${step ? `<dl><dt>Started</dt><dd>${step.startedAt}</dd><dt>Finished</dt><dd>${step.finishedAt ?? '—'}</dd>${typeof called === 'string' ? `<dt>Called</dt><dd><a href="${escapeHtml(pageOf(called))}">run <code>${escapeHtml(called)}</code></a></dd>` : ''}</dl>` : '<p>It did not run.</p>'}
${step?.error ? `<p class="error">${escapeHtml(errorKind(step.error.kind, step.status === 'failed'))}: ${escapeHtml(step.error.message)}</p>` : ''}
${step?.error?.details ? `<h3>Error details</h3><pre>${escapeHtml(shownJson(step.error.details))}</pre>` : ''}
${shown !== undefined ? `<h3>Output</h3><pre>${escapeHtml(shown)}</pre>` : ''}
${inner.length > 0 ? `<h3>Inside</h3><table><tr><th>Step</th><th>Status</th><th>Attempts</th></tr>${inner.map((sub) => `<tr><td><code>${escapeHtml(sub.key)}</code></td><td>${badge(sub.status)}</td><td>${sub.attempts}</td></tr>`).join('')}</table>` : ''}
</details>`;
}

/** JSON as the page shows it: indented, and cut after SHOWN_OUTPUT_CHARS. */
function shownJson(value: unknown): string {
  const text = JSON.stringify(value, null, 2);
  return text.length > SHOWN_OUTPUT_CHARS
    ? `${text.slice(0, SHOWN_OUTPUT_CHARS)}\n… ${text.length - SHOWN_OUTPUT_CHARS} more characters (the API has all of it)`
    : text;
}
