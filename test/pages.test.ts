import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

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
    expect(fields).toEqual(['key', 'name', 'description', 'concurrency', 'failureFlow', 'trigger', 'nodes', 'edges']);
    const text = await flowDocument.innerText();
    for (const nested of ['operation', 'retry', 'maxAttempts', 'when']) expect(text).toContain(nested);
    expect(await flowDocument.locator('details pre').first().innerText()).toContain('"key": "orders-to-erp"');

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
    await page.screenshot({ path: path.join(SHOTS, 'docs-search.png') });
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
    const cookie = (await page.context().cookies()).find((entry) => entry.name === 'tributary_operator');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });
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
