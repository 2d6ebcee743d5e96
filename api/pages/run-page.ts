import { type RequestHandler, Router, type Response } from 'express';
import { ConflictError, type FlowDocument, type Run, type Step } from '../../engine/model/index.ts';
import { isTerminal, type FlowStore, type RunStore } from '../../engine/store/index.ts';
import { parseTraceparent } from '../../engine/telemetry/index.ts';
import type { RunService } from '../../engine/services/index.ts';
import { escapeHtml } from './html.ts';
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

const STATUS_COLORS: Record<string, string> = {
  succeeded: '#2e7d32',
  // Not the green of success: the run went on past a failure.
  handled: '#a15c00',
  failed: '#c62828',
  waiting: '#ef6c00',
  running: '#1565c0',
  queued: '#1565c0',
  held: '#6d4c41',
  filtered: '#616161',
  skipped: '#616161',
  cancelled: '#616161',
  'not run': '#9e9e9e',
};

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
    ['Took', duration(run.startedAt, run.finishedAt)],
    ['Trace', traceId ? `<code>${traceId}</code>` : 'not traced'],
  ];
  if (run.replayOf) facts.push(['Replays', `<code>${run.replayOf}</code>`]);
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

type NodeDoc = FlowDocument['nodes'][number];

/** What became of a node: its step's status, and for a loop, what its items say at a glance when some failed. */
interface Shown {
  status: string;
  items?: string;
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

const BOX = { width: 170, height: 54, gapX: 60, gapY: 24, margin: 16 };

/**
 * The flow as a graph, `across` (left to right) or `down` (top to bottom, for a narrow screen): the trigger, then
 * each node a step after its furthest predecessor, coloured by what became of it; a node links to its details.
 * Error paths are dashed.
 */
function graphSvg(
  nodes: NodeDoc[],
  edges: FlowDocument['edges'],
  shownOf: (node: NodeDoc) => Shown,
  direction: 'across' | 'down',
): string {
  const column = new Map<string, number>([['trigger', 0]]);
  // Longest path from the trigger: as many relaxations as there are nodes settle any acyclic graph.
  for (let round = 0; round <= nodes.length; round++)
    for (const edge of edges) {
      const from = column.get(edge.from);
      if (from !== undefined && (column.get(edge.to) ?? -1) < from + 1) column.set(edge.to, from + 1);
    }
  for (const node of nodes) if (!column.has(node.id)) column.set(node.id, 1);
  // Each node's step (its column across, its row down) and its place among the nodes of that step.
  const across = direction === 'across';
  const pitch = across
    ? { x: BOX.width + BOX.gapX, y: BOX.height + BOX.gapY }
    : { x: BOX.width + BOX.gapY, y: BOX.height + BOX.gapY * 1.5 };
  const places = new Map<number, number>();
  const position = new Map<string, { x: number; y: number }>();
  for (const id of ['trigger', ...nodes.map((node) => node.id)]) {
    const step = column.get(id)!;
    const place = places.get(step) ?? 0;
    places.set(step, place + 1);
    const [x, y] = across ? [step, place] : [place, step];
    position.set(id, { x: BOX.margin + x * pitch.x, y: BOX.margin + y * pitch.y });
  }
  const steps = Math.max(...places.keys()) + 1;
  const most = Math.max(...places.values());
  const [columns, rows] = across ? [steps, most] : [most, steps];
  const width = BOX.margin * 2 + (columns - 1) * pitch.x + BOX.width;
  const height = BOX.margin * 2 + (rows - 1) * pitch.y + BOX.height;
  const lines = edges
    .map((edge) => {
      const from = position.get(edge.from);
      const to = position.get(edge.to);
      if (!from || !to) return '';
      const onError = (edge as { on?: string }).on === 'error';
      // Across: from the right side to the left side; down: from the bottom to the top.
      const [x1, y1, x2, y2] = across
        ? [from.x + BOX.width, from.y + BOX.height / 2, to.x, to.y + BOX.height / 2]
        : [from.x + BOX.width / 2, from.y + BOX.height, to.x + BOX.width / 2, to.y];
      const bend = across ? [BOX.gapX / 2, 0] : [0, BOX.gapY * 0.75];
      return `<path d="M${x1} ${y1} C${x1 + bend[0]} ${y1 + bend[1]} ${x2 - bend[0]} ${y2 - bend[1]} ${x2} ${y2}" fill="none" stroke="${onError ? '#c62828' : '#888'}" stroke-width="1.5"${onError ? ' stroke-dasharray="5 4"' : ''} marker-end="url(#arrow)"/>`;
    })
    .join('');
  const box = (id: string, label: string, sub: string, { status, items }: Shown) => {
    const { x, y } = position.get(id)!;
    const color = STATUS_COLORS[items ? 'handled' : status] ?? '#616161';
    const shape = `<rect x="${x}" y="${y}" width="${BOX.width}" height="${BOX.height}" rx="6" fill="#fff" stroke="${color}" stroke-width="${status === 'not run' ? 1 : 3}"${status === 'not run' ? ' stroke-dasharray="4 3"' : ''}/>
<text x="${x + 10}" y="${y + 22}" font-weight="600">${escapeHtml(clip(label))}</text>
<text x="${x + 10}" y="${y + 42}" fill="${color}" font-size="12">${escapeHtml(clip(sub))}</text>`;
    return id === 'trigger'
      ? shape
      : `<a href="#node-${escapeHtml(id)}"><title>${escapeHtml(`${label}: ${status}${items ? `, ${items}` : ''}`)}</title>${shape}</a>`;
  };
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui,sans-serif" font-size="14" role="img" aria-label="The flow's nodes and what became of each">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0 0L10 5L0 10z" fill="#888"/></marker></defs>
${lines}${box('trigger', 'trigger', 'received', { status: 'succeeded' })}${nodes
  .map((node) => {
    const shown = shownOf(node);
    // The status first: a long operation's name is what a narrow box cuts.
    return box(node.id, node.id, `${shown.items ? 'items failed' : shown.status} · ${node.operation}`, shown);
  })
  .join('')}</svg>`;
}

const clip = (text: string) => (text.length > 22 ? `${text.slice(0, 21)}…` : text);
