import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunPageLinks } from '../api/auth/run-links.ts';
import { Keyring } from '../engine/secrets/index.ts';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

/** Debian's chromium (`.ci/run` installs it); CHROMIUM points elsewhere. */
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** Screenshots of what a person sees, kept for looking at (not compared). */
const SHOTS = path.join(os.tmpdir(), 'tributary-pages');

let env: TestPlatform;
let browser: Browser;
let operator: ApiClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM`);
  mkdirSync(SHOTS, { recursive: true });
  env = await startTestPlatform('postgres');
  operator = await env.operator();
  // As root (CI), Chromium's sandbox cannot start: the pages are our own.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

describe('the API reference at /docs, in a headless browser', () => {
  it("shows the flow document's fields, the request body and answers of each route, and links them", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${env.url}/docs`);
    // Folded, the page is a list of routes and schemas; a link to one opens it.
    expect(await page.locator('details[open]').count()).toBe(0);
    await page.getByRole('link', { name: 'EditableFlow', exact: true }).first().click();
    await page.goto(`${env.url}/docs#schema-FlowDocument`);
    expect(await page.locator('#schema-FlowDocument').getAttribute('open')).not.toBeNull();
    await page.getByRole('button', { name: 'Open all' }).click();
    const flowDocument = page.locator('#schema-FlowDocument');
    await expect.poll(() => flowDocument.isVisible()).toBe(true);
    const fields = await flowDocument.evaluate((section) =>
      [...section.querySelector('table.fields')!.querySelectorAll(':scope > tbody > tr > td:first-child > code')].map(
        (cell) => cell.textContent,
      ),
    );
    expect(fields).toEqual([
      'key',
      'name',
      'description',
      'concurrency',
      'flowControl',
      'failureFlow',
      'trigger',
      'nodes',
      'edges',
    ]);
    const text = await flowDocument.innerText();
    for (const nested of ['operation', 'retry', 'maxAttempts', 'when', 'debounce', 'maxWait', 'scope'])
      expect(text).toContain(nested);
    expect(await flowDocument.locator('details pre').first().innerText()).toContain('"key": "orders-to-erp"');

    // A problem's type is a link into this page: the entry of its kind.
    const missing = await fetch(`${env.url}/no/such/route`);
    await page.goto(new URL((await missing.json()).type, env.url).href);
    const kind = page.locator('#problem-not-found');
    expect(await kind.isVisible()).toBe(true);
    expect(await kind.innerText()).toContain('404');

    const create = page.locator('[id="post-/api/v1/editable-flows"]');
    expect(await create.locator('h4').allTextContents()).toEqual(['Request body', 'Answers']);
    await create.getByRole('link', { name: 'FlowDocument' }).first().click();
    expect(page.url()).toMatch(/#schema-FlowDocument$/);
    const answers = await create.innerText();
    expect(answers).toMatch(/201 The new flow, with its draft\.\s*Flow\b/);
    expect(answers).toContain('Problem');
    // Every operation a node can run, from its definition: config fields, side effects, deprecation.
    const request = page.locator('[id="operation-http.request"]');
    expect(await request.locator('h3').innerText()).toMatch(/^http\.request — .* v1\.\d+\.\d+/);
    for (const field of ['method', 'url', 'auth', 'timeoutMs']) expect(await request.innerText()).toContain(field);
    expect(await request.innerText()).toContain('Changes an outside system');
    const deprecated = page.locator('[id="operation-shopify.refund-sync-to-erp"]');
    await deprecated.getByRole('link', { name: 'shopify.orders-import-list' }).click();
    expect(page.url()).toMatch(/#operation-shopify\.orders-import-list$/);
    expect(await page.locator('#signature-shopify').innerText()).toContain('X-Shopify-Hmac-Sha256');
    // The nodes of the language beside them: a loop, its config and its limits.
    const loop = page.locator('#node-loop');
    expect(await loop.locator('h3').innerText()).toBe('loop — Loop over items');
    for (const field of ['items', 'key', 'concurrency', 'onItemFailure', 'At most 10000 items'])
      expect(await loop.innerText()).toContain(field);
    // Descriptions' `code` is shown as code, never as backticks.
    expect(await page.locator('body').innerText()).not.toContain('`');
    expect(await page.locator('[id="post-/oauth/token"] p code', { hasText: 'error_description' }).count()).toBe(1);
    // Every route that takes a body shows an example of one.
    const bodies = await page.evaluate(() =>
      [...document.querySelectorAll('details.op')]
        .filter((route) => [...route.querySelectorAll('h4')].some((heading) => heading.textContent === 'Request body'))
        .map((route) => ({ id: route.id, example: route.querySelector('pre.example')?.textContent ?? null })),
    );
    expect(bodies.length).toBeGreaterThanOrEqual(30);
    expect(bodies.filter((route) => route.example === null)).toEqual([]);
    expect(bodies.find((route) => route.id === 'put-/api/v1/global-variables/{name}')?.example).toContain('"value"');
    await page.getByRole('button', { name: 'Close all' }).click();
    await page.screenshot({ path: path.join(SHOTS, 'docs.png') });

    // The search box keeps what holds every word typed, opened, and hides the rest.
    await page.getByRole('searchbox').fill('suspend tenant');
    const suspend = page.locator('[id="post-/api/v1/tenants/{tenantId}/suspend"]');
    expect(await suspend.isVisible()).toBe(true);
    expect(await suspend.getAttribute('open')).not.toBeNull();
    expect(await page.locator('[id="post-/api/v1/editable-flows"]').isVisible()).toBe(false);
    expect(await page.locator('#found').innerText()).toMatch(/^\d+ of \d+$/);
    // The results are in view, not below the index.
    expect(await page.locator('#contents').isVisible()).toBe(false);
    const first = page.locator('details.op:not(.hidden), details.schema:not(.hidden)').first();
    const box = await first.boundingBox();
    expect(box!.y).toBeGreaterThanOrEqual(0);
    expect(box!.y).toBeLessThan(900);
    await page.screenshot({ path: path.join(SHOTS, 'docs-search.png') });
    // Alerts have their tag, not the logs'.
    await page.getByRole('searchbox').fill('alert-rules');
    expect(await page.locator('[id="post-/api/v1/alert-rules"]').isVisible()).toBe(true);
    const tagOf = (id: string) =>
      page.evaluate((of) => {
        let at = document.getElementById(of)?.previousElementSibling;
        while (at && at.tagName !== 'H2') at = at.previousElementSibling;
        return at?.id;
      }, id);
    expect(await tagOf('post-/api/v1/alert-rules')).toBe('Alert');
    expect(await tagOf('get-/api/v1/logs')).toBe('Logs');
    await page.close();
  });

  it('is read at phone width (400 px): nothing wider than the screen, all of it open', async () => {
    const page = await browser.newPage({ viewport: { width: 400, height: 800 } });
    await page.goto(`${env.url}/docs`);
    await page.screenshot({ path: path.join(SHOTS, 'docs-400.png') });
    await page.getByRole('button', { name: 'Open all' }).click();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);
    await page.goto(`${env.url}/docs#post-/api/v1/editable-flows`);
    await page.screenshot({ path: path.join(SHOTS, 'docs-400-route.png') });
    await page.close();
  });
});

describe('the queue dashboard, in a headless browser', () => {
  it('signs an operator in with a form, shows the queues, refuses others, and signs out', async () => {
    const page = await browser.newPage();
    const outside: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(env.url) && !request.url().startsWith('data:')) outside.push(request.url());
    });
    await page.goto(`${env.url}/admin/queues`);
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in');

    const tenant = await env.tenant('pages-tenant');
    await page.fill('#client_id', tenant.credentials.client_id);
    await page.fill('#client_secret', tenant.credentials.client_secret);
    await page.click('button[type=submit]');
    expect(await page.getByRole('alert').innerText()).toBe('This client is not an operator client.');
    await page.fill('#client_id', operator.credentials.client_id);
    await page.fill('#client_secret', 'wrong');
    await page.click('button[type=submit]');
    expect(await page.getByRole('alert').innerText()).toBe('Unknown client or wrong secret.');

    await page.fill('#client_id', operator.credentials.client_id);
    await page.fill('#client_secret', operator.credentials.client_secret);
    await page.click('button[type=submit]');
    expect(new URL(page.url()).pathname).toBe('/admin/queues');
    // bull-board's page loads the queues with its own requests, which the cookie authorizes.
    await page.getByText('runs', { exact: true }).first().waitFor();
    await page.getByText('ticks', { exact: true }).first().waitFor();
    await page.getByText('Loading...').waitFor({ state: 'hidden' });
    await page.screenshot({ path: path.join(SHOTS, 'dashboard.png') });
    const cookie = (await page.context().cookies()).find((entry) => entry.name === 'tributary_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });
    // A dashboard session for an hour, not an API token: the API refuses it, as it refuses anything unsigned.
    expect(cookie!.expires * 1000 - Date.now()).toBeLessThanOrEqual(3600_000);
    const asBearer = await fetch(`${env.url}/api/v1/tenants`, {
      headers: { authorization: `Bearer ${cookie!.value}` },
    });
    expect(asBearer.status).toBe(401);
    // Ours, and self-contained: every request the page made went to this server.
    expect(await page.title()).toBe('Tributary queues');
    expect(outside).toEqual([]);
    expect(await page.locator('img[src="/admin/tributary.svg"]').count()).toBeGreaterThan(0);
    // The header's last menu holds the links to the API reference and out.
    await page.locator('[class^="actions-"] > li').last().locator('button').click();
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-menu.png') });
    expect(await page.getByText('API reference').getAttribute('href')).toBe('/docs');
    await page.getByText('Sign out').click();
    await page.waitForURL((url) => url.pathname === '/admin/sign-in');
    await page.goto(`${env.url}/admin/queues`);
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
    await page.close();

    // Programs still get a 401 with a Basic challenge, and Basic still works.
    const unauthenticated = await fetch(`${env.url}/admin/queues/api/queues`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toContain('Basic');
    const basic = Buffer.from(`${operator.credentials.client_id}:${operator.credentials.client_secret}`).toString(
      'base64',
    );
    expect(
      (await fetch(`${env.url}/admin/queues/api/queues`, { headers: { authorization: `Basic ${basic}` } })).status,
    ).toBe(200);
  });
});

describe("a run's page, in a headless browser", () => {
  const SECRET = 'erp-token-never-on-a-page';
  const failingFlow = {
    key: 'refunds-to-erp',
    name: 'Refunds to the ERP',
    trigger: { type: 'webhook', config: {} },
    nodes: [
      {
        id: 'shape',
        operation: 'transform',
        config: { expression: '{{ {"refund": $input.body.refund, "token": $secrets.ERP_TOKEN} }}' },
      },
      {
        id: 'post',
        operation: 'http.request',
        config: { method: 'POST', url: '{{ $vars.ERP_URL }}/refunds', body: '{{ $steps.shape }}' },
        retry: { maxAttempts: 1 },
      },
      { id: 'confirm', operation: 'transform', config: { expression: '{{ $steps.post.status }}' } },
    ],
    edges: [
      { from: 'trigger', to: 'shape' },
      { from: 'shape', to: 'post' },
      { from: 'post', to: 'confirm' },
    ],
  };
  let erp: Receiver;
  let tenant: ApiClient;
  let failedRun: { runId: string; messageId: string };

  beforeAll(async () => {
    // The ERP refuses (422, a permanent failure) until told otherwise.
    erp = await new Receiver(() =>
      erpRefuses ? { status: 422, body: { error: 'closed period' } } : undefined,
    ).start();
    tenant = await env.tenant('run-pages');
    await tenant.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await tenant.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: SECRET });
    await tenant.publish(failingFlow);
    const delivered = await sendWebhook(env.url, 'run-pages', 'refunds-to-erp', { refund: 'R-1001' });
    failedRun = delivered.body;
    expect((await tenant.settledRun(failedRun.runId)).status).toBe('failed');
  });
  afterAll(async () => {
    await erp?.close();
  });
  let erpRefuses = true;

  it('shows a tenant, through a signed link, the graph and each node, and replays from it', async () => {
    const link = await tenant.call('POST', `/api/v1/runs/${failedRun.runId}/page-link`, {});
    expect(link.status).toBe(201);
    expect(link.body).toMatchObject({ canReplay: true, url: expect.stringContaining('/run-pages/') });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const outside: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(env.url)) outside.push(request.url());
    });
    const answer = await page.goto(link.body.url);
    expect(answer?.headers()['referrer-policy']).toBe('no-referrer');
    expect(await page.locator('h1').innerText()).toBe('Refunds to the ERP failed');
    // The graph: each node, coloured by what became of it, linking to its details.
    const boxes = page.locator('.graph.across svg a');
    expect(await boxes.count()).toBe(3);
    for (const [node, status] of [
      ['shape', 'succeeded'],
      ['post', 'failed'],
      ['confirm', 'not run'],
    ])
      expect(await page.locator(`.graph.across svg a[href="#node-${node}"] title`).textContent()).toBe(
        `${node}: ${status}`,
      );
    // A failed node is open: its attempts and error; a node that succeeded shows its output, secrets redacted.
    const post = page.locator('#node-post');
    expect(await post.getAttribute('open')).not.toBeNull();
    expect(await post.innerText()).toMatch(/permanent: .*422/);
    await page.locator('.graph.across svg a[href="#node-shape"]').click();
    await page.locator('#node-shape summary').click();
    const shape = await page.locator('#node-shape').innerText();
    expect(shape).toContain('"refund": "R-1001"');
    expect(shape).toContain('[REDACTED]');
    expect(await page.content()).not.toContain(SECRET);
    expect(await page.locator('dl').first().innerText()).toMatch(/Trace\s+not traced/);
    await page.screenshot({ path: path.join(SHOTS, 'run-page.png'), fullPage: true });
    expect(outside).toEqual([]);

    // At phone width nothing is wider than the screen, and the graph runs down it, every node in view whole.
    await page.setViewportSize({ width: 400, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);
    expect(await page.locator('.graph.across').isVisible()).toBe(false);
    for (const node of ['shape', 'post', 'confirm']) {
      const box = await page.locator(`.graph.down svg a[href="#node-${node}"] rect`).boundingBox();
      expect(box!.x + box!.width, node).toBeLessThanOrEqual(400);
    }
    // Each box says its status whole, before the operation's name.
    expect(await page.locator('.graph.down svg a[href="#node-post"] text').nth(1).textContent()).toMatch(/^failed · /);
    await page.screenshot({ path: path.join(SHOTS, 'run-page-400.png'), fullPage: true });

    // Replayed from the page once the ERP takes it: the new run's page, reached without signing in.
    erpRefuses = false;
    await page.getByRole('button', { name: 'Replay this message' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/run-pages/') && url.href !== link.body.url);
    await eventually(async () => {
      await page.reload();
      expect(await page.locator('h1').innerText()).toBe('Refunds to the ERP succeeded');
    });
    expect(await page.locator('.graph.across svg a[href="#node-confirm"] title').textContent()).toBe(
      'confirm: succeeded',
    );
    await page.close();
    // The link opens the run without sign-in: the request log has its path, never its token.
    const token = new URL(link.body.url).pathname.split('/').pop()!;
    expect(env.lines.filter((line) => line.includes('"path":"/run-pages/[REDACTED]')).length).toBeGreaterThan(0);
    expect(env.lines.filter((line) => line.includes(token))).toEqual([]);
  });

  it('shows a loop whose items failed at a glance, and the run as handled, not succeeded', async () => {
    await tenant.publish({
      key: 'lines-to-erp',
      name: 'Lines to the ERP',
      trigger: { type: 'webhook', config: {} },
      nodes: [
        {
          id: 'lines',
          operation: 'loop',
          config: { items: '{{ $input.body.lines }}', concurrency: 1, onItemFailure: 'continue' },
          nodes: [
            {
              id: 'send',
              operation: 'http.request',
              config: { method: 'POST', url: '{{ $vars.ERP_URL }}/lines', body: '{{ $item }}' },
              retry: { maxAttempts: 1 },
            },
          ],
        },
      ],
      edges: [{ from: 'trigger', to: 'lines' }],
    });
    erpRefuses = false;
    erp.script({ status: 200 }, { status: 500 }, { status: 200 });
    const delivered = await sendWebhook(env.url, 'run-pages', 'lines-to-erp', { lines: ['a', 'b', 'c'] });
    expect((await tenant.settledRun(delivered.body.runId)).status).toBe('handled');
    const link = await tenant.call('POST', `/api/v1/runs/${delivered.body.runId}/page-link`, {});
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(link.body.url);
    expect(await page.locator('h1').innerText()).toBe('Lines to the ERP handled');
    expect(await page.locator('.graph.across svg a[href="#node-lines"] title').textContent()).toBe(
      'lines: succeeded, 1 of 3 items failed',
    );
    const loop = page.locator('#node-lines');
    expect(await loop.getAttribute('open')).not.toBeNull();
    expect(await loop.locator('summary').innerText()).toContain('1 of 3 items failed');
    await page.screenshot({ path: path.join(SHOTS, 'run-page-loop.png'), fullPage: true });
    await page.close();
    erpRefuses = true;
  });

  it("shows what a run waited for before it started, and names the run that took a debounced one's place", async () => {
    await tenant.publish({
      key: 'order-edits',
      name: 'Order edits',
      trigger: { type: 'webhook', config: {} },
      flowControl: {
        concurrency: { key: '{{ $input.body.order }}', scope: 'tenant' },
        debounce: { key: '{{ $input.body.order }}', period: '1s' },
      },
      nodes: [{ id: 'shape', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
      edges: [{ from: 'trigger', to: 'shape' }],
    });
    const first = await sendWebhook(env.url, 'run-pages', 'order-edits', { order: 'O-7', n: 1 });
    const last = await sendWebhook(env.url, 'run-pages', 'order-edits', { order: 'O-7', n: 2 });
    expect((await tenant.settledRun(last.body.runId)).status).toBe('succeeded');
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const facts = async () =>
      Object.fromEntries(
        await page
          .locator('dl dt')
          .evaluateAll((terms) =>
            terms.map((term) => [term.textContent, (term.nextElementSibling as HTMLElement).innerText]),
          ),
      );
    await page.goto((await tenant.call('POST', `/api/v1/runs/${last.body.runId}/page-link`, {})).body.url);
    expect(await facts()).toMatchObject({
      'Waited to start': expect.stringMatching(
        /^\d+ ms \(its debounce period \(1000 ms\), then the runs of its concurrency key ahead of it\)$/,
      ),
      'Concurrency key': 'O-7 (tenant)',
    });
    await page.goto((await tenant.call('POST', `/api/v1/runs/${first.body.runId}/page-link`, {})).body.url);
    expect(await page.locator('h1').innerText()).toBe('Order edits debounced');
    expect((await facts())['Debounced by']).toBe(last.body.runId);
    await page.locator('dd a', { hasText: last.body.runId }).click();
    expect(await page.locator('h1').innerText()).toBe('Order edits succeeded');
    await page.close();
  });

  it('links a call to the run it started and back, and shows how long a wait and a call took', async () => {
    await tenant.publish({
      key: 'slow-child',
      name: 'Slow child',
      trigger: { type: 'webhook', config: {} },
      nodes: [
        { id: 'pause', operation: 'wait', config: { for: '1s' } },
        { id: 'double', operation: 'transform', config: { expression: '{{ $input.body.n * 2 }}' } },
      ],
      edges: [
        { from: 'trigger', to: 'pause' },
        { from: 'pause', to: 'double' },
      ],
    });
    await tenant.publish({
      key: 'caller',
      name: 'Caller',
      trigger: { type: 'webhook', config: {} },
      nodes: [{ id: 'call', operation: 'call', config: { flow: 'slow-child', input: { n: 2 } } }],
      edges: [{ from: 'trigger', to: 'call' }],
    });
    const delivered = await sendWebhook(env.url, 'run-pages', 'caller', {});
    expect((await tenant.settledRun(delivered.body.runId)).status).toBe('succeeded');
    const link = await tenant.call('POST', `/api/v1/runs/${delivered.body.runId}/page-link`, {});
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(link.body.url);
    const took = async (node: string) =>
      Number(/· (\d+) ms$/.exec(await page.locator(`#node-${node} summary`).innerText())![1]);
    // The call took as long as the run it started, wait included.
    expect(await took('call')).toBeGreaterThanOrEqual(1000);
    // Called and woken when the call ended (or looked again): passes, not retries.
    expect(await page.locator('dl').first().innerText()).toMatch(
      /Passes\s+(\d+) \(a worker took the run up \1 times\)/,
    );
    await page.locator('#node-call summary').click();
    await page.locator('#node-call a', { hasText: 'run ' }).click();
    expect(await page.locator('h1').innerText()).toBe('Slow child succeeded');
    expect(await took('pause')).toBeGreaterThanOrEqual(1000);
    await page.locator('dl').first().getByRole('link').click();
    expect(await page.locator('h1').innerText()).toBe('Caller succeeded');
    await page.close();
  });

  it('refuses forged and expired links, and a replay the link does not allow', async () => {
    const links = new RunPageLinks(Keyring.parse(env.config.secretsKey!));
    const grant = { tenantId: 'run-pages', runId: failedRun.runId, canReplay: true };
    const expired = links.token({ ...grant, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    expect((await fetch(`${env.url}/run-pages/${expired}`)).status).toBe(410);
    const valid = links.token({ ...grant, expiresAt: Math.floor(Date.now() / 1000) + 60 });
    const forged = `${Buffer.from(JSON.stringify(['other-tenant', failedRun.runId, 9e9, 1])).toString('base64url')}.${valid.split('.').slice(1).join('.')}`;
    expect((await fetch(`${env.url}/run-pages/${forged}`)).status).toBe(404);
    expect((await fetch(`${env.url}/run-pages/${valid}`)).status).toBe(200);

    // A tenant's client finds only its own tenant's runs.
    const reader = await env.tenant('run-pages-reader', ['runs:read']);
    expect((await reader.as('run-pages').call('POST', `/api/v1/runs/${failedRun.runId}/page-link`, {})).status).toBe(
      403,
    );
    expect((await reader.call('POST', `/api/v1/runs/${failedRun.runId}/page-link`, {})).status).toBe(404);

    // A client that may read runs but not replay them gets a page without the button.
    const narrow = await env.tenant('run-pages-narrow', ['runs:read', 'flows:write', 'variables:write']);
    await narrow.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await narrow.publish({
      key: 'forward',
      name: 'Forward',
      trigger: { type: 'webhook', config: {} },
      nodes: [{ id: 'post', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.ERP_URL }}/x' } }],
      edges: [{ from: 'trigger', to: 'post' }],
    });
    const narrowRun = (await sendWebhook(env.url, 'run-pages-narrow', 'forward', {})).body;
    await narrow.settledRun(narrowRun.runId);
    const narrowLink = await narrow.call('POST', `/api/v1/runs/${narrowRun.runId}/page-link`, { expiresInSeconds: 60 });
    expect(narrowLink.body.canReplay).toBe(false);
    const page = await (await fetch(narrowLink.body.url)).text();
    expect(page).not.toContain('Replay this message');
    const token = new URL(narrowLink.body.url).pathname.split('/').pop();
    expect((await fetch(`${env.url}/run-pages/${token}/replay`, { method: 'POST' })).status).toBe(403);
    expect(
      (await narrow.call('POST', `/api/v1/runs/${narrowRun.runId}/page-link`, { expiresInSeconds: 999_999 })).status,
    ).toBe(400);
  });

  it("is linked from the run's job on the dashboard, which names the tenant, flow and run", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${env.url}/admin/sign-in`);
    await page.fill('#client_id', operator.credentials.client_id);
    await page.fill('#client_secret', operator.credentials.client_secret);
    await page.click('button[type=submit]');
    // A failed run's job is failed; its card names the flow by key once the dashboard has looked it up.
    const name = `run-pages · refunds-to-erp v1 · run …${failedRun.runId.slice(-8)}`;
    await eventually(async () => {
      await page.goto(`${env.url}/admin/queues/queue/runs?status=failed`);
      await page.getByText('Loading...').waitFor({ state: 'hidden' });
      expect(await page.getByText(name).count()).toBeGreaterThan(0);
    });
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-run-job.png') });
    const runPageLink = page.locator(`a[href="/admin/runs/run-pages/${failedRun.runId}"]`);
    expect(await runPageLink.count()).toBeGreaterThan(0);
    await page.goto(`${env.url}${await runPageLink.first().getAttribute('href')}`);
    expect(await page.locator('h1').innerText()).toBe('Refunds to the ERP failed');
    expect(await page.getByRole('button', { name: 'Replay this message' }).count()).toBe(1);
    // Another site's form cannot replay through the operator's remembered credentials.
    const cookies = (await page.context().cookies()).map((entry) => `${entry.name}=${entry.value}`).join('; ');
    const replay = (site: string) =>
      fetch(`${env.url}/admin/runs/run-pages/${failedRun.runId}/replay`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: cookies,
          'sec-fetch-site': site,
          origin: site === 'cross-site' ? 'https://evil.example' : env.url,
        },
      });
    expect((await replay('cross-site')).status).toBe(403);
    expect((await replay('same-site')).status).toBe(403);
    await page.close();
    // Without the operator's session, the operator's page asks to sign in.
    expect((await fetch(`${env.url}/admin/runs/run-pages/${failedRun.runId}`)).status).toBe(401);
  });
});
