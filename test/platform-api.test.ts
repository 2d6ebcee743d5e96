import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClientCredentials } from '../api/auth/clients.ts';
import { Receiver } from './support/receiver.ts';
import {
  ApiClient,
  eventually,
  getToken,
  POSTGRES_URL,
  sendWebhook,
  spawnWorker,
  startTestPlatform,
  type TestPlatform,
} from './support/harness.ts';

/** A flow that echoes what it got: every run of it succeeds. */
const echo = (key: string) => ({
  key,
  name: key,
  trigger: { type: 'webhook', config: { deliveryIdHeader: 'x-shopify-webhook-id' } },
  nodes: [{ id: 'echo', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
  edges: [{ from: 'trigger', to: 'echo' }],
});

let env: TestPlatform;
let operator: ApiClient;

beforeAll(async () => {
  env = await startTestPlatform('postgres');
  operator = await env.operator();
});
afterAll(() => env?.close());

const statusOf = async (client: ApiClient, runId: string) =>
  (await client.call('GET', `/api/v1/runs/${runId}`)).body.status;

describe('Tenant (operator)', () => {
  it("creates, lists and gets tenants; refuses a repeated id and a bad one with the field's path", async () => {
    const created = await operator.call('POST', '/api/v1/tenants', { id: 'acme', name: 'Acme Ltd' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'acme', name: 'Acme Ltd', status: 'active', suspendedReason: null });
    expect((await operator.call('POST', '/api/v1/tenants', { id: 'acme' })).status).toBe(409);
    const bad = await operator.call('POST', '/api/v1/tenants', { id: 'Not Valid' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: '$.body.id' })]);
    expect((await operator.call('GET', '/api/v1/tenants/acme')).body.name).toBe('Acme Ltd');
    expect((await operator.call('GET', '/api/v1/tenants/nobody')).status).toBe(404);
    const listed = await operator.call('GET', '/api/v1/tenants?first=1');
    expect(listed.body.nodes).toHaveLength(1);
    expect(listed.body.pageInfo.hasNextPage).toBe(false);
  });

  it('suspends a tenant: its calls get 403 with the reason, its deliveries are held; resuming runs them', async () => {
    const shop = await env.tenant('shop-s');
    await shop.publish(echo('orders'));
    const suspended = await operator.call('POST', '/api/v1/tenants/shop-s/suspend', { reason: 'invoice 42 unpaid' });
    expect(suspended.body).toMatchObject({ status: 'suspended', suspendedReason: 'invoice 42 unpaid' });

    const refused = await shop.call('GET', '/api/v1/editable-flows');
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('invoice 42 unpaid');
    // Operators still see the tenant's data; a tenant that does not exist is a 404 to them.
    expect((await operator.as('shop-s').call('GET', '/api/v1/editable-flows')).status).toBe(200);
    expect((await operator.as('no-such-shop').call('PUT', '/api/v1/global-variables/X', { value: 1 })).status).toBe(
      404,
    );

    const delivered = await sendWebhook(env.url, 'shop-s', 'orders', { order: 1 });
    expect(delivered.status).toBe(202);
    const run = (await operator.as('shop-s').call('GET', `/api/v1/runs/${delivered.body.runId}`)).body;
    expect(run).toMatchObject({ status: 'held', heldBy: 'suspended' });
    const message = await operator.as('shop-s').call('GET', `/api/v1/messages/${delivered.body.messageId}`);
    expect(message.body).toMatchObject({
      status: 'blocked',
      body: { order: 1 },
      runs: [expect.objectContaining({ status: 'held' })],
    });

    const resumed = await operator.call('POST', '/api/v1/tenants/shop-s/resume', {});
    expect(resumed.body).toMatchObject({
      tenant: { status: 'active', suspendedReason: null },
      released: 1,
      discarded: 0,
    });
    expect((await shop.settledRun(delivered.body.runId)).status).toBe('succeeded');
    expect((await shop.call('GET', '/api/v1/editable-flows')).status).toBe(200);
  });

  it('deletes a tenant only when confirmed, and leaves no row of it behind', async () => {
    const doomed = await env.tenant('doomed');
    await doomed.publish(echo('orders'));
    await doomed.publish({
      key: 'poll',
      name: 'poll',
      trigger: { type: 'schedule', config: { every: '1h' } },
      nodes: [{ id: 'echo', operation: 'transform', config: { expression: '{{ 1 }}' } }],
      edges: [{ from: 'trigger', to: 'echo' }],
    });
    await doomed.call('PUT', '/api/v1/global-variables/X', { value: 1 });
    await doomed.call('PUT', '/api/v1/secret-global-variables/Y', { value: 'hush-hush-hush' });
    await doomed.call('PUT', '/api/v1/blocked-topics/x', {});
    const delivered = await sendWebhook(env.url, 'doomed', 'orders', { order: 1 });
    await doomed.settledRun(delivered.body.runId);
    expect(
      (await env.platform.schedules.queue.getJobSchedulers()).some((scheduler) =>
        scheduler.key.startsWith('flow:doomed:'),
      ),
    ).toBe(true);

    const unconfirmed = await operator.call('DELETE', '/api/v1/tenants/doomed?confirm=other');
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.body.errors).toEqual([expect.objectContaining({ path: '$.query.confirm' })]);
    expect((await operator.call('DELETE', '/api/v1/tenants/doomed?confirm=doomed')).status).toBe(204);

    const db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    try {
      const schema = env.config.databaseSchema!;
      const tables = await db.query<{ table_name: string; column_name: string }>(
        `select table_name, column_name from information_schema.columns
         where table_schema = $1 and column_name in ('tenant_id')
         union all select 'tenants', 'id'`,
        [schema],
      );
      expect(tables.rows.length).toBeGreaterThanOrEqual(14);
      for (const { table_name, column_name } of tables.rows) {
        const { rows } = await db.query(
          `select count(*)::int as n from ${schema}.${table_name} where ${column_name} = 'doomed'`,
        );
        expect(rows[0].n, `${table_name} rows of the deleted tenant`).toBe(0);
      }
    } finally {
      await db.end();
    }
    expect(
      (await env.platform.schedules.queue.getJobSchedulers()).some((scheduler) =>
        scheduler.key.startsWith('flow:doomed:'),
      ),
    ).toBe(false);
    expect((await doomed.call('GET', '/api/v1/editable-flows')).status).toBe(403);
    expect((await sendWebhook(env.url, 'doomed', 'orders', { order: 2 })).status).toBe(404);
    expect((await operator.call('GET', '/api/v1/tenants/doomed')).status).toBe(404);
  });
});

describe('BlockedTopic and MessageInfo', () => {
  let shop: ApiClient;
  beforeAll(async () => {
    shop = await env.tenant('shop-t');
    await shop.publish(echo('refunds'));
  });
  const refund = (n: number, headers: Record<string, string> = {}) =>
    sendWebhook(env.url, 'shop-t', 'refunds', { refund: n }, { 'x-shopify-topic': 'refunds/create', ...headers });

  it('records and answers deliveries of a blocked topic without running them; unblocking releases them', async () => {
    const blocked = await shop.call('PUT', '/api/v1/blocked-topics/refunds%2Fcreate', { reason: 'ERP cut-over' });
    expect(blocked.status).toBe(201);
    expect(blocked.body).toMatchObject({ topic: 'refunds/create', reason: 'ERP cut-over', held: 0 });
    const held = [await refund(1), await refund(2), await refund(3)];
    expect(held.map((response) => response.status)).toEqual([202, 202, 202]);
    const other = await sendWebhook(
      env.url,
      'shop-t',
      'refunds',
      { refund: 0 },
      { 'x-shopify-topic': 'refunds/update' },
    );
    expect((await shop.settledRun(other.body.runId)).status).toBe('succeeded');
    for (const response of held) expect(await statusOf(shop, response.body.runId)).toBe('held');
    expect((await shop.call('GET', '/api/v1/blocked-topics')).body.nodes).toEqual([
      expect.objectContaining({ topic: 'refunds/create', held: 3 }),
    ]);
    expect(
      (await shop.call('GET', '/api/v1/messages?status=blocked')).body.nodes.map((message: any) => message.body),
    ).toEqual([{ refund: 3 }, { refund: 2 }, { refund: 1 }]);

    const unblocked = await shop.call('DELETE', '/api/v1/blocked-topics/refunds%2Fcreate');
    expect(unblocked.body).toEqual({ released: 3, discarded: 0 });
    for (const response of held) expect((await shop.settledRun(response.body.runId)).status).toBe('succeeded');
    expect((await shop.call('DELETE', '/api/v1/blocked-topics/refunds%2Fcreate')).status).toBe(404);
  });

  it('discards what a blocked topic held when asked to', async () => {
    await shop.call('PUT', '/api/v1/blocked-topics/refunds%2Fcreate', {});
    const held = await refund(4);
    const discarded = await shop.call('DELETE', '/api/v1/blocked-topics/refunds%2Fcreate?heldMessages=discard');
    expect(discarded.body).toEqual({ released: 0, discarded: 1 });
    expect(await shop.settledRun(held.body.runId)).toMatchObject({
      status: 'cancelled',
      error: { message: 'discarded when refunds/create was unblocked' },
    });
    expect((await shop.call('GET', `/api/v1/messages/${held.body.messageId}`)).body.status).toBe('cancelled');
  });

  it('lists repeated deliveries as duplicates of the first, filters by topic, replays a finished message', async () => {
    const first = await refund(5, {
      'x-shopify-webhook-id': 'wh-5',
      'x-api-key': 'hush-key',
      'x-access-token': 'hush-token',
      'x-auth': 'hush-auth',
      'x-trace': 't1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    const again = await refund(5, { 'x-shopify-webhook-id': 'wh-5' });
    expect(again.status).toBe(200);
    await shop.settledRun(first.body.runId);
    const duplicates = (await shop.call('GET', '/api/v1/messages?status=duplicate')).body.nodes;
    expect(duplicates).toEqual([
      expect.objectContaining({ duplicateOf: first.body.messageId, topic: 'refunds/create', body: null, runId: null }),
    ]);
    const byTopic = (await shop.call('GET', '/api/v1/messages?topic=refunds%2Fupdate')).body.nodes;
    expect(byTopic.map((message: any) => message.body)).toEqual([{ refund: 0 }]);
    const badFilter = await shop.call('GET', '/api/v1/messages?status=lost&receivedFrom=yesterday');
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.errors.map((error: any) => error.path).sort()).toEqual([
      '$.query.receivedFrom',
      '$.query.status',
    ]);

    const replayed = await shop.call('POST', `/api/v1/messages/${first.body.messageId}/replay`);
    expect(replayed.status).toBe(202);
    expect((await shop.settledRun(replayed.body.id)).status).toBe('succeeded');
    const message = (await shop.call('GET', `/api/v1/messages/${first.body.messageId}`)).body;
    expect(message.runs.map((run: any) => run.id)).toEqual([first.body.runId, replayed.body.id]);
    // Headers are kept by an allow list: the vendor's, the ordinary ones; nothing else a sender adds.
    expect(message.headers).toMatchObject({
      'x-shopify-topic': 'refunds/create',
      'x-shopify-webhook-id': 'wh-5',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    expect(message.headers['x-trace']).toBeUndefined();
    expect(JSON.stringify(message)).not.toMatch(/hush-/);
    expect((await shop.call('POST', `/api/v1/messages/${duplicates[0].id}/replay`)).status).toBe(409);
    // Another tenant cannot see or replay it.
    const stranger = await env.tenant('stranger');
    expect((await stranger.call('GET', `/api/v1/messages/${first.body.messageId}`)).status).toBe(404);
    expect((await stranger.call('POST', `/api/v1/messages/${first.body.messageId}/replay`)).status).toBe(404);
    expect((await stranger.call('GET', '/api/v1/messages')).body.nodes).toEqual([]);
  });

  it('releases held messages from the message queue once their hold is lifted', async () => {
    await shop.call('PUT', '/api/v1/blocked-topics/refunds%2Fcreate', {});
    const held = await refund(6);
    await shop.call('DELETE', '/api/v1/blocked-topics/refunds%2Fcreate?heldMessages=keep');
    expect(await statusOf(shop, held.body.runId)).toBe('held');
    const released = await shop.call('POST', '/api/v1/message-queue/held/release', { topic: 'refunds/create' });
    expect(released.body).toEqual({ released: 1, discarded: 0 });
    await eventually(async () => expect(await statusOf(shop, held.body.runId)).toBe('succeeded'));
  });
});

describe('MessageQueue', () => {
  it('counts the backlog and retries the failed runs of a flow on its fixed version', async () => {
    const shop = await env.tenant('shop-q');
    const failing = {
      ...echo('fragile'),
      nodes: [
        {
          id: 'echo',
          operation: 'transform',
          config: { expression: '{{ $input.body.ok ? $input.body : $error("not ok") }}' },
        },
      ],
    };
    const flowId = await shop.publish(failing);
    const sent = [
      await sendWebhook(env.url, 'shop-q', 'fragile', { ok: true }),
      await sendWebhook(env.url, 'shop-q', 'fragile', { ok: false }),
      await sendWebhook(env.url, 'shop-q', 'fragile', { ok: false }),
    ];
    const outcomes = await Promise.all(sent.map((response) => shop.settledRun(response.body.runId)));
    expect(outcomes.map((run) => run.status)).toEqual(['succeeded', 'failed', 'failed']);

    const backlog = (await shop.call('GET', '/api/v1/message-queue')).body;
    expect(backlog.runs).toMatchObject({ succeeded: 1, failed: 2, queued: 0, held: 0 });
    expect(backlog.messages).toMatchObject({ succeeded: 1, failed: 2, accepted: 0 });
    expect(backlog.oldestWaiting).toBeNull();
    const later = (
      await shop.call(
        'GET',
        `/api/v1/message-queue?since=${encodeURIComponent(new Date(Date.now() + 2 * 3600_000).toISOString())}`,
      )
    ).body;
    expect(later.runs.failed).toBe(0);

    // The fix: the same flow without the failure, published as version 2.
    const editable = (await shop.call('GET', `/api/v1/editable-flows/${flowId}`)).body;
    await shop.call('PUT', `/api/v1/editable-flows/${flowId}`, {
      revision: editable.revision,
      document: echo('fragile'),
    });
    expect((await shop.call('POST', `/api/v1/editable-flows/${flowId}/publish`)).status).toBe(201);
    const retried = await shop.call('POST', '/api/v1/message-queue/retry-failed', { flowId });
    expect(retried.body).toMatchObject({ retried: 2, more: false });
    for (const runId of retried.body.runIds)
      expect(await shop.settledRun(runId)).toMatchObject({ status: 'succeeded', flowVersion: 2 });
    expect((await shop.call('POST', '/api/v1/message-queue/retry-failed', { flowId })).body.retried).toBe(0);
    expect((await shop.call('GET', '/api/v1/message-queue')).body.messages).toMatchObject({ succeeded: 3, failed: 0 });
  });
});

describe('Queue (operator) and Version', () => {
  it('shows job counts, pauses and resumes the run queue, and cleans finished jobs', async () => {
    const shop = await env.tenant('shop-p');
    await shop.publish(echo('orders'));
    const listed = (await operator.call('GET', '/api/v1/queues')).body.nodes;
    expect(listed.map((queue: any) => queue.name).sort()).toEqual(['runs', 'ticks']);
    expect(listed.find((queue: any) => queue.name === 'runs').workers).toBeGreaterThanOrEqual(1);

    expect((await operator.call('POST', '/api/v1/queues/runs/pause')).body.paused).toBe(true);
    const waiting = await sendWebhook(env.url, 'shop-p', 'orders', { order: 1 });
    expect(waiting.status).toBe(202);
    // Paused, runs wait in their tenants' lanes: no job is handed to the queue.
    expect((await operator.call('GET', '/api/v1/queues/runs')).body.backlog).toMatchObject({
      runs: 1,
      tenants: [{ tenant: 'shop-p', runs: 1 }],
    });
    expect(await statusOf(shop, waiting.body.runId)).toBe('queued');
    expect((await operator.call('POST', '/api/v1/queues/runs/resume')).body.paused).toBe(false);
    expect((await shop.settledRun(waiting.body.runId)).status).toBe('succeeded');

    const completed = (await operator.call('GET', '/api/v1/queues/runs')).body.counts.completed;
    expect(completed).toBeGreaterThan(0);
    expect((await operator.call('POST', '/api/v1/queues/runs/clean', { graceMs: 0 })).body.count).toBe(completed);
    expect((await operator.call('GET', '/api/v1/queues/runs')).body.counts.completed).toBe(0);
    // Failed jobs of failed runs go back to waiting; the runs are finished and stay failed.
    const failedJobs = (await operator.call('GET', '/api/v1/queues/runs')).body.counts.failed;
    expect((await operator.call('POST', '/api/v1/queues/runs/retry-failed')).body.count).toBe(failedJobs);
    expect((await operator.call('POST', '/api/v1/queues/nope/pause')).status).toBe(404);
    const badClean = await operator.call('POST', '/api/v1/queues/runs/clean', { state: 'active' });
    expect(badClean.body.errors).toEqual([expect.objectContaining({ path: '$.body.state' })]);
  });

  it('tells the product, API, build, runtime, Shopify API and operation versions', async () => {
    const shop = await env.tenant('shop-v');
    const version = (await shop.call('GET', '/api/v1/version')).body;
    expect(version).toMatchObject({
      api: 'v1',
      runtime: { node: process.version },
      integrations: { shopify: { apiVersions: ['2025-10', '2026-10'] } },
    });
    expect(version.operations).toMatchObject({
      transform: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      'shopify.refund-export': expect.any(String),
    });
    const head = (() => {
      try {
        return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
      } catch {
        return null;
      }
    })();
    expect(version.commit).toBe(head);
  });
});

/** Debian's promtool (`.ci/run` installs the prometheus package when it is missing); PROMTOOL points elsewhere. */
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

describe('Platform (operator)', () => {
  const basic = (client: ApiClient) =>
    `Basic ${Buffer.from(`${client.credentials.client_id}:${client.credentials.client_secret}`).toString('base64')}`;

  it('exports Prometheus metrics: deliveries per tenant, finished runs, durations, queue depths', async () => {
    const shop = await env.tenant('shop-m');
    await shop.publish(echo('orders'));
    const accepted = await sendWebhook(env.url, 'shop-m', 'orders', { order: 1 });
    await shop.settledRun(accepted.body.runId);
    await sendWebhook(env.url, 'shop-m', 'nothing-here', {});

    expect((await fetch(`${env.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${env.url}/metrics`, { headers: { authorization: basic(shop) } })).status).toBe(401);
    const scraped = await fetch(`${env.url}/metrics`, { headers: { authorization: basic(operator) } });
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toMatch(/^tributary_deliveries_total\{tenant="shop-m",outcome="accepted"\} 1$/m);
    expect(text).toMatch(/^tributary_deliveries_total\{tenant="",outcome="no-flow"\} [1-9]/m);
    expect(text).toMatch(/^tributary_runs_finished_total\{tenant="shop-m",status="succeeded"\} 1$/m);
    expect(text).toMatch(/^tributary_run_attempt_seconds_count\{status="succeeded"\} [1-9]/m);
    expect(text).toMatch(/^tributary_queue_jobs\{queue="runs",state="waiting"\} \d+$/m);
    expect(text).toMatch(/^# TYPE tributary_tenant_backlog_runs gauge$/m);
    expect(text).toMatch(/^tributary_process_resident_memory_bytes \d+/m);
    // The shipped alert rules name only metrics that exist.
    const rules = readFileSync(new URL('../docs/prometheus-alerts.yml', import.meta.url), 'utf8');
    const named = [...rules.matchAll(/^\s+expr: .*$/gm)].flatMap((line) => line[0].match(/tributary_\w+/g) ?? []);
    expect(named.length).toBeGreaterThan(4);
    for (const metric of named) expect(text, metric).toMatch(new RegExp(`^# TYPE ${metric} `, 'm'));
    // Prometheus' own tool finds nothing to say about the rules or the exposition.
    expect(execFileSync(PROMTOOL, ['check', 'rules', 'docs/prometheus-alerts.yml'], { encoding: 'utf8' })).toMatch(
      /SUCCESS: \d+ rules found/,
    );
    expect(execFileSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' })).toBe('');
  });

  it('reports held runs per tenant, and how long the oldest has waited', async () => {
    const held = await env.tenant('held-m');
    await held.publish(echo('orders'));
    expect((await operator.call('POST', '/api/v1/tenants/held-m/suspend', { reason: 'unpaid' })).status).toBe(200);
    expect((await sendWebhook(env.url, 'held-m', 'orders', { order: 1 })).status).toBe(202);
    const text = await (await fetch(`${env.url}/metrics`, { headers: { authorization: basic(operator) } })).text();
    expect(text).toMatch(/^tributary_tenant_held_runs\{tenant="held-m"\} 1$/m);
    expect(text).toMatch(/^tributary_tenant_held_oldest_seconds\{tenant="held-m"\} \d/m);
    expect(text).toMatch(/^# TYPE tributary_jobs_stalled_total counter$/m);
  });

  it('lets a worker process without the API serve its metrics on METRICS_PORT', async () => {
    // Below Linux's ephemeral range (32768-60999), where the suite's own connections and servers take their ports.
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    // A password in REDIS_URL (this Redis needs none, and ioredis goes on) is never printed.
    const redisUrl = new URL(env.config.redisUrl);
    redisUrl.password = 'pass-in-the-url';
    const { child, ready } = spawnWorker(env.config, {
      METRICS_PORT: String(port),
      HOST: '127.0.0.1',
      REDIS_URL: redisUrl.toString(),
      LOG_LEVEL: 'debug',
    });
    let printed = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
    });
    try {
      await ready;
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      const scraped = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: basic(operator) } });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^tributary_queue_jobs\{queue="runs",state="active"\} \d+$/m);
      expect(printed).toContain(`worker consuming redis://:***@${redisUrl.host}`);
      expect(printed).not.toContain('pass-in-the-url');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('maintenance: deliveries get 503 + Retry-After, not recorded; workers drain; leaving accepts again', async () => {
    const shop = await env.tenant('shop-x');
    await shop.publish(echo('orders'));
    const entered = await operator.call('PUT', '/api/v1/platform/maintenance', {
      reason: 'database upgrade',
      retryAfterSeconds: 120,
    });
    expect(entered.body).toMatchObject({ enabled: true, reason: 'database upgrade', retryAfterSeconds: 120 });
    expect((await operator.call('GET', '/api/v1/queues/runs')).body.paused).toBe(true);

    const refused = await sendWebhook(env.url, 'shop-x', 'orders', { order: 1 });
    expect(refused.status).toBe(503);
    expect(refused.body.type).toBe('/docs#problem-maintenance');
    expect(refused.headers.get('retry-after')).toBe('120');
    expect((await shop.call('GET', '/api/v1/messages')).body.nodes).toEqual([]);
    await eventually(async () =>
      expect((await operator.call('GET', '/api/v1/platform/maintenance')).body).toMatchObject({
        enabled: true,
        drained: true,
        activeJobs: 0,
      }),
    );
    const ready = await (await fetch(`${env.url}/readyz`, { headers: { authorization: basic(operator) } })).json();
    expect(ready.checks.maintenance).toMatchObject({ reason: 'database upgrade' });

    const left = await operator.call('DELETE', '/api/v1/platform/maintenance');
    expect(left.body).toMatchObject({ enabled: false, drained: false });
    expect((await operator.call('GET', '/api/v1/queues/runs')).body.paused).toBe(false);
    const accepted = await sendWebhook(env.url, 'shop-x', 'orders', { order: 1 });
    expect(accepted.status).toBe(202);
    expect((await shop.settledRun(accepted.body.runId)).status).toBe('succeeded');
  });
});

describe('Statistic, Dashboard and UserSettings', () => {
  it('counts the runs that happened per flow and status, with durations, and the messages per topic', async () => {
    const shop = await env.tenant('shop-stats');
    const fragile = await shop.publish({
      ...echo('fragile'),
      nodes: [
        {
          id: 'echo',
          operation: 'transform',
          config: { expression: '{{ $input.body.ok ? $input.body : $error("not ok") }}' },
        },
      ],
    });
    const steady = await shop.publish(echo('steady'));
    const sends = [
      sendWebhook(env.url, 'shop-stats', 'fragile', { ok: true }, { 'x-topic': 'a' }),
      sendWebhook(env.url, 'shop-stats', 'fragile', { ok: false }, { 'x-topic': 'a' }),
      sendWebhook(env.url, 'shop-stats', 'fragile', { ok: false }, { 'x-topic': 'b' }),
      sendWebhook(env.url, 'shop-stats', 'steady', { ok: true }, { 'x-topic': 'b', 'x-shopify-webhook-id': 'once' }),
      sendWebhook(env.url, 'shop-stats', 'steady', { ok: true }, { 'x-topic': 'b', 'x-shopify-webhook-id': 'once' }),
    ];
    const responses = [];
    for (const send of sends) responses.push(await send);
    for (const response of responses) await shop.settledRun(response.body.runId);

    const response = await shop.call('GET', '/api/v1/statistics');
    expect(response.status, response.text).toBe(200);
    const stats = response.body;
    const byFlow = Object.fromEntries(stats.runs.map((row: any) => [row.flowId, row]));
    expect(stats.runs).toHaveLength(2);
    expect(byFlow[fragile]).toMatchObject({ total: 3, counts: { succeeded: 1, failed: 2 } });
    expect(byFlow[steady]).toMatchObject({ total: 1, counts: { succeeded: 1 } });
    for (const row of stats.runs) {
      expect(row.durationMs.p50).toBeGreaterThanOrEqual(0);
      expect(row.durationMs.p99).toBeGreaterThanOrEqual(row.durationMs.p50);
      expect(row.latencyMs.p99).toBeGreaterThanOrEqual(row.durationMs.p99);
    }
    const topics = Object.fromEntries(stats.messages.map((row: any) => [row.topic, [row.count, row.duplicates]]));
    expect(topics).toEqual({ a: [2, 0], b: [2, 1] });
    expect((await shop.call('GET', `/api/v1/statistics?interval=day&flowId=${steady}`)).body.runs).toEqual([
      expect.objectContaining({ flowId: steady, total: 1 }),
    ]);
    const tooLong = await shop.call('GET', '/api/v1/statistics?from=2026-01-01T00:00:00Z&to=2026-11-01T00:00:00Z');
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual([expect.objectContaining({ path: '$.query.from' })]);

    const dashboard = (await shop.call('GET', '/api/v1/dashboard')).body;
    expect(dashboard).toMatchObject({
      activeFlows: 2,
      last24h: { runs: { succeeded: 2, failed: 2 }, failureRate: 0.5 },
      backlog: { queued: 0, held: 0 },
    });
    expect(dashboard.lastErrors).toEqual([
      expect.objectContaining({
        flowId: fragile,
        flowName: 'fragile',
        error: expect.objectContaining({ kind: 'permanent' }),
      }),
    ]);
  });

  it('keeps settings per user, with defaults, validated', async () => {
    const shop = await env.tenant('shop-u');
    expect((await shop.call('GET', '/api/v1/user-settings')).body).toEqual({
      subject: shop.credentials.client_id,
      settings: { timezone: 'UTC', locale: 'en-US', pageSize: 50 },
      updatedAt: null,
    });
    const saved = await shop.call('PUT', '/api/v1/user-settings', { timezone: 'Europe/Berlin', pageSize: 20 });
    expect(saved.body.settings).toEqual({ timezone: 'Europe/Berlin', locale: 'en-US', pageSize: 20 });
    expect((await shop.call('GET', '/api/v1/user-settings')).body.settings.timezone).toBe('Europe/Berlin');
    const bad = await shop.call('PUT', '/api/v1/user-settings', { timezone: 'Mars/Olympus', pageSize: 500 });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((error: any) => error.path)).toEqual(['$.body.pageSize']);
    expect((await shop.call('PUT', '/api/v1/user-settings', { timezone: 'Mars/Olympus' })).body.errors).toEqual([
      expect.objectContaining({ path: '$.body.timezone' }),
    ]);
    // Another user of the tenant has their own.
    const credentials = await createClientCredentials(env.platform.store, { tenantId: 'shop-u' });
    const colleague = new ApiClient(
      env.url,
      await getToken(env.url, credentials.client_id, credentials.client_secret),
      'shop-u',
      credentials,
    );
    expect((await colleague.call('GET', '/api/v1/user-settings')).body).toMatchObject({
      subject: credentials.client_id,
      updatedAt: null,
    });
  });
});

describe('PlatformGlobal and PlatformTenantGlobal', () => {
  it("lets flows read $platform values, a tenant's override first", async () => {
    const [plain, special] = [await env.tenant('plain'), await env.tenant('special')];
    expect((await operator.call('PUT', '/api/v1/platform-globals/ERP_HOST', { value: 'erp.example.com' })).status).toBe(
      201,
    );
    expect((await operator.call('PUT', '/api/v1/platform-globals/ERP_HOST', { value: 'erp.example.net' })).status).toBe(
      200,
    );
    await operator.call('PUT', '/api/v1/platform-globals/REGION', { value: 'eu' });
    expect(
      (await operator.call('PUT', '/api/v1/tenants/special/platform-globals/ERP_HOST', { value: 'erp.special.com' }))
        .status,
    ).toBe(201);
    expect((await operator.call('PUT', '/api/v1/tenants/nobody/platform-globals/ERP_HOST', { value: 1 })).status).toBe(
      404,
    );
    expect((await operator.call('GET', '/api/v1/tenants/special/platform-globals')).body.nodes).toEqual([
      expect.objectContaining({ name: 'ERP_HOST', value: 'erp.special.com' }),
    ]);
    expect((await plain.call('PUT', '/api/v1/platform-globals/ERP_HOST', { value: 'mine' })).status).toBe(403);

    const reader = {
      ...echo('platform'),
      nodes: [
        {
          id: 'echo',
          operation: 'transform',
          config: {
            expression:
              '{{ {"url": "https://" & $platform.ERP_HOST & "/" & $platform.REGION, "missing": $platform.NOPE} }}',
          },
        },
      ],
    };
    const outputs = [];
    for (const client of [plain, special]) {
      await client.publish(reader);
      const sent = await sendWebhook(env.url, client.tenantId, 'platform', {});
      outputs.push((await client.settledRun(sent.body.runId)).steps[0].output);
    }
    expect(outputs).toEqual([{ url: 'https://erp.example.net/eu' }, { url: 'https://erp.special.com/eu' }]);

    expect((await operator.call('DELETE', '/api/v1/tenants/special/platform-globals/ERP_HOST')).status).toBe(204);
    const sent = await sendWebhook(env.url, 'special', 'platform', {});
    expect((await special.settledRun(sent.body.runId)).steps[0].output).toEqual({ url: 'https://erp.example.net/eu' });
    expect((await operator.call('DELETE', '/api/v1/platform-globals/REGION')).status).toBe(204);
    expect((await operator.call('GET', '/api/v1/platform-globals/REGION')).status).toBe(404);
  });
});

describe('DataSpace', () => {
  it('keeps mapping tables that flows read with $document and write with dataspace.put', async () => {
    const shop = await env.tenant('shop-d');
    expect(
      (await shop.call('PUT', '/api/v1/data-spaces/skus', { description: 'Shopify SKU to ERP item' })).status,
    ).toBe(201);
    await shop.call('PUT', '/api/v1/data-spaces/seen', {});
    const imported = await shop.call('POST', '/api/v1/data-spaces/skus/documents/bulk', {
      documents: [
        { key: 'SKU-1', value: { item: 'ERP-100' } },
        { key: 'SKU-2', value: { item: 'ERP-200' } },
      ],
    });
    expect(imported.body).toEqual({ created: 2, updated: 0 });
    expect(
      (
        await shop.call('POST', '/api/v1/data-spaces/skus/documents/bulk', {
          documents: [{ key: 'SKU-2', value: { item: 'ERP-201' } }],
        })
      ).body,
    ).toEqual({ created: 0, updated: 1 });
    const tooMany = await shop.call('POST', '/api/v1/data-spaces/skus/documents/bulk', {
      documents: Array.from({ length: 1001 }, (_, i) => ({ key: `k${i}`, value: i })),
    });
    expect(tooMany.body.errors).toEqual([expect.objectContaining({ path: '$.body.documents' })]);
    expect(
      (await shop.call('POST', '/api/v1/data-spaces/nope/documents/bulk', { documents: [{ key: 'a', value: 1 }] }))
        .status,
    ).toBe(404);
    expect((await shop.call('GET', '/api/v1/data-spaces/skus')).body).toMatchObject({ name: 'skus', documents: 2 });
    expect(
      (await shop.call('GET', '/api/v1/data-spaces/skus/documents?prefix=SKU-&first=1')).body.pageInfo.hasNextPage,
    ).toBe(true);

    const flowId = await shop.publish({
      ...echo('map-sku'),
      nodes: [
        {
          id: 'map',
          operation: 'transform',
          config: { expression: '{{ {"sku": $input.body.sku, "item": $document("skus", $input.body.sku).item} }}' },
        },
        {
          id: 'remember',
          operation: 'dataspace.put',
          config: { space: 'seen', key: '{{ $input.body.sku }}', value: '{{ $steps.map }}' },
        },
      ],
      edges: [
        { from: 'trigger', to: 'map' },
        { from: 'map', to: 'remember' },
      ],
    });
    expect(flowId).toBeTruthy();
    const known = await sendWebhook(env.url, 'shop-d', 'map-sku', { sku: 'SKU-2' });
    const unknown = await sendWebhook(env.url, 'shop-d', 'map-sku', { sku: 'SKU-9' });
    expect((await shop.settledRun(known.body.runId)).steps.map((step: any) => step.output)).toEqual([
      { sku: 'SKU-2', item: 'ERP-201' },
      { space: 'seen', key: 'SKU-2', created: true },
    ]);
    expect((await shop.settledRun(unknown.body.runId)).steps[0].output).toEqual({ sku: 'SKU-9' });
    expect((await shop.call('GET', '/api/v1/data-spaces/seen/documents/SKU-2')).body.value).toEqual({
      sku: 'SKU-2',
      item: 'ERP-201',
    });

    // Another tenant has its own spaces: the same names reach nothing of this one.
    const stranger = await env.tenant('stranger-d');
    expect((await stranger.call('GET', '/api/v1/data-spaces/skus/documents/SKU-1')).status).toBe(404);
    expect((await stranger.call('GET', '/api/v1/data-spaces')).body.nodes).toEqual([]);

    expect((await shop.call('DELETE', '/api/v1/data-spaces/skus/documents/SKU-1')).status).toBe(204);
    expect((await shop.call('DELETE', '/api/v1/data-spaces/skus')).status).toBe(204);
    expect((await shop.call('GET', '/api/v1/data-spaces/skus/documents')).status).toBe(404);
  });
});

describe('Logs', () => {
  it('keeps what operations log, redacted, searchable by run, level and text; old lines are pruned', async () => {
    const shop = await env.tenant('shop-l');
    const receiver = await new Receiver().start();
    try {
      await shop.call('PUT', '/api/v1/secret-global-variables/PATH_TOKEN', { value: 'path-secret-123' });
      await shop.publish({
        ...echo('logged'),
        nodes: [
          {
            id: 'note',
            operation: 'log',
            config: { message: 'order {{ $input.body.n }} for {{ $secrets.PATH_TOKEN }}', data: '{{ $input.body }}' },
          },
          {
            id: 'call',
            operation: 'http.request',
            retry: { maxAttempts: 2, backoffMs: 50 },
            config: {
              method: 'POST',
              url: `${receiver.url}/{{ $secrets.PATH_TOKEN }}/{{ $input.body.n }}`,
              body: '{{ $input.body }}',
            },
          },
        ],
        edges: [
          { from: 'trigger', to: 'note' },
          { from: 'note', to: 'call' },
        ],
      });
      // The first run's call is refused once (a retry, then 200); the second one's for good.
      receiver.script({ status: 503 });
      const first = await sendWebhook(env.url, 'shop-l', 'logged', { n: 1 });
      await shop.settledRun(first.body.runId);
      receiver.script({ status: 404 });
      const second = await sendWebhook(env.url, 'shop-l', 'logged', { n: 2 });
      expect((await shop.settledRun(second.body.runId)).status).toBe('failed');

      const all = (await shop.call('GET', '/api/v1/logs')).body.nodes;
      expect(all.map((line: any) => [line.nodeId, line.level])).toEqual([
        ['call', 'warn'],
        ['note', 'info'],
        ['call', 'warn'],
        ['note', 'info'],
      ]);
      expect(JSON.stringify(all)).not.toContain('path-secret-123');
      // The process log gets the same lines, redacted as well.
      expect(env.lines.some((line) => line.includes('order 1 for [REDACTED]'))).toBe(true);
      expect(env.lines.join('')).not.toContain('path-secret-123');
      const ofFirst = (await shop.call('GET', `/api/v1/logs?runId=${first.body.runId}`)).body.nodes;
      expect(ofFirst.map((line: any) => line.message)).toEqual([
        expect.stringMatching(/^POST http:\/\/127\.0\.0\.1:\d+\/\[REDACTED\]\/1 answered 503$/),
        'order 1 for [REDACTED]',
      ]);
      expect(ofFirst[1].data).toEqual({ data: { n: 1 } });
      const warnings = (await shop.call('GET', '/api/v1/logs?level=warn')).body.nodes;
      expect(warnings.map((line: any) => line.data.status)).toEqual([404, 503]);
      expect((await shop.call('GET', '/api/v1/logs?text=ANSWERED%20503')).body.nodes).toHaveLength(1);
      expect((await shop.call('GET', '/api/v1/logs?level=debug')).status).toBe(400);
      const stranger = await env.tenant('stranger-l');
      expect((await stranger.call('GET', '/api/v1/logs')).body.nodes).toEqual([]);

      expect(await env.platform.store.pruneRunLogs(new Date(Date.now() + 60_000).toISOString())).toBeGreaterThanOrEqual(
        4,
      );
      expect((await shop.call('GET', '/api/v1/logs')).body.nodes).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe('Test', () => {
  it('runs a draft with sample input: a dry run sends nothing and records nothing, a real test run sends', async () => {
    const shop = await env.tenant('shop-test');
    const receiver = await new Receiver().start();
    try {
      await shop.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: 'erp-token-secret' });
      await shop.call('PUT', '/api/v1/data-spaces/seen', {});
      const created = await shop.call('POST', '/api/v1/editable-flows', {
        ...echo('tested'),
        nodes: [
          {
            id: 'map',
            operation: 'transform',
            config: { expression: '{{ {"order": $input.body.id, "total": $input.body.total} }}' },
          },
          {
            id: 'send',
            operation: 'http.request',
            config: {
              method: 'POST',
              url: `${receiver.url}/orders`,
              body: '{{ $steps.map }}',
              auth: { type: 'bearer', token: '{{ $secrets.ERP_TOKEN }}' },
            },
          },
          {
            id: 'remember',
            operation: 'dataspace.put',
            config: { space: 'seen', key: '{{ $string($steps.map.order) }}', value: '{{ $steps.map }}' },
          },
        ],
        edges: [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
          { from: 'send', to: 'remember' },
        ],
      });
      const flowId = created.body.id;

      const dry = await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, {
        input: { body: { id: 7, total: '12.50' } },
      });
      expect(dry.status).toBe(200);
      expect(dry.body).toMatchObject({ status: 'succeeded', dryRun: true, error: null });
      expect(dry.body.steps.map((step: any) => [step.nodeId, step.status])).toEqual([
        ['map', 'succeeded'],
        ['send', 'succeeded'],
        ['remember', 'succeeded'],
      ]);
      expect(dry.body.steps[1].output).toEqual({
        dryRun: true,
        wouldSend: {
          method: 'POST',
          url: `${receiver.url}/orders`,
          body: { order: 7, total: '12.50' },
          headers: expect.objectContaining({
            authorization: '[REDACTED]',
            'content-type': 'application/json',
            'idempotency-key': expect.any(String),
          }),
        },
      });
      expect(dry.body.steps[2].output).toEqual({
        dryRun: true,
        wouldSend: { put: { space: 'seen', key: '7', value: { order: 7, total: '12.50' } } },
      });
      expect(JSON.stringify(dry.body)).not.toContain('erp-token-secret');
      expect(receiver.requests).toHaveLength(0);
      expect((await shop.call('GET', '/api/v1/data-spaces/seen/documents/7')).status).toBe(404);
      expect((await shop.call('GET', '/api/v1/runs')).body.nodes).toEqual([]);
      expect((await shop.call('GET', '/api/v1/messages')).body.nodes).toEqual([]);
      expect((await shop.call('GET', '/api/v1/statistics')).body.runs).toEqual([]);

      const real = await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, {
        input: { body: { id: 8, total: '1.00' } },
        dryRun: false,
      });
      expect(real.body).toMatchObject({ status: 'succeeded', dryRun: false });
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0].headers.authorization).toBe('Bearer erp-token-secret');
      expect((await shop.call('GET', '/api/v1/data-spaces/seen/documents/8')).body.value).toEqual({
        order: 8,
        total: '1.00',
      });
      // A successful call logs nothing in the run's log: its answer is the step's output.
      expect(real.body.logs).toEqual([]);
      expect((await shop.call('GET', '/api/v1/runs')).body.nodes).toEqual([]);

      // One node, with the outputs of the nodes before it given.
      const one = await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, {
        node: 'remember',
        steps: { map: { order: 9 } },
        dryRun: false,
      });
      expect(one.body.steps).toEqual([
        expect.objectContaining({ nodeId: 'remember', output: { space: 'seen', key: '9', created: true } }),
      ]);
      expect(receiver.requests).toHaveLength(1);

      // A failing node is reported with its error; a bad document with the paths of its faults.
      const failing = await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, {
        document: {
          ...echo('tested'),
          nodes: [{ id: 'boom', operation: 'transform', config: { expression: '{{ $error("no good") }}' } }],
          edges: [{ from: 'trigger', to: 'boom' }],
        },
      });
      expect(failing.body).toMatchObject({
        status: 'failed',
        error: { kind: 'permanent', node: 'boom', message: expect.stringContaining('no good') },
      });
      const invalid = await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, {
        document: { ...echo('tested'), nodes: [{ id: 'x', operation: 'nope', config: {} }] },
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ path: expect.stringMatching(/^\$\.body\.document\.nodes\[0\]/) }),
        ]),
      );
      expect((await shop.call('POST', `/api/v1/editable-flows/${flowId}/test`, { node: 'ghost' })).status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});

describe('LowCodeAction: tenant-defined actions', () => {
  it('saves versioned JSONata actions with schemas, runs them as action:<name> nodes, per tenant', async () => {
    const shop = await env.tenant('shop-a');
    const path = '/api/v1/low-code-actions/actions/net-amount';
    const inputSchema = {
      type: 'object',
      required: ['total', 'discount'],
      properties: { total: { type: 'number' }, discount: { type: 'number' } },
    };
    const outputSchema = { type: 'object', required: ['net'], properties: { net: { type: 'number' } } };
    const v1 = await shop.call('PUT', path, {
      expression: '{"net": total - discount}',
      inputSchema,
      outputSchema,
      description: 'Total after discount',
    });
    expect(v1.status).toBe(201);
    expect(v1.body).toMatchObject({ name: 'net-amount', version: 1, description: 'Total after discount' });
    expect(
      (
        await shop.call('PUT', path, {
          expression: '{"net": $round((total - discount) * 1.2, 2)}',
          inputSchema,
          outputSchema,
        })
      ).body.version,
    ).toBe(2);
    const bad = await shop.call('PUT', path, { expression: '{"net": total -', inputSchema: { type: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((error: any) => error.path).sort()).toEqual(['$.body.expression', '$.body.inputSchema']);
    expect((await shop.call('GET', path)).body.version).toBe(2);
    expect((await shop.call('GET', `${path}/versions`)).body.nodes.map((action: any) => action.version)).toEqual([
      2, 1,
    ]);
    expect((await shop.call('GET', `${path}/versions/1`)).body.expression).toBe('{"net": total - discount}');

    await shop.publish({
      ...echo('net'),
      nodes: [
        { id: 'latest', operation: 'action:net-amount', config: { input: '{{ $input.body }}' } },
        { id: 'first', operation: 'action:net-amount', config: { input: '{{ $input.body }}', version: 1 } },
      ],
      edges: [
        { from: 'trigger', to: 'latest' },
        { from: 'latest', to: 'first' },
      ],
    });
    const ok = await sendWebhook(env.url, 'shop-a', 'net', { total: 10, discount: 2.5 });
    expect((await shop.settledRun(ok.body.runId)).steps.map((step: any) => step.output)).toEqual([
      { net: 9 },
      { net: 7.5 },
    ]);
    const wrong = await sendWebhook(env.url, 'shop-a', 'net', { total: 'ten' });
    expect(await shop.settledRun(wrong.body.runId)).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', node: 'latest', message: expect.stringContaining('$.nodes.latest.config.input') },
    });

    // A flow naming an action the tenant does not have cannot be published; other tenants see none of these.
    const created = await shop.call('POST', '/api/v1/editable-flows', {
      ...echo('missing'),
      nodes: [{ id: 'x', operation: 'action:nowhere', config: {} }],
      edges: [{ from: 'trigger', to: 'x' }],
    });
    expect(created.status).toBe(201);
    const refused = await shop.call('POST', `/api/v1/editable-flows/${created.body.id}/publish`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: '$.draft.nodes[0].operation', node: 'x' })]);
    // Validation answers what publishing will: the same error, for the draft and for a document in the body.
    const validated = await shop.call('POST', `/api/v1/editable-flows/${created.body.id}/validate`);
    expect(validated.body).toEqual({ valid: false, errors: refused.body.errors, warnings: [] });
    const proposed = await shop.call('POST', `/api/v1/editable-flows/${created.body.id}/validate`, {
      document: {
        ...echo('missing'),
        nodes: [{ id: 'y', operation: 'action:net-amount', config: { version: 9 } }],
        edges: [{ from: 'trigger', to: 'y' }],
      },
    });
    expect(proposed.body.errors).toEqual([
      expect.objectContaining({
        path: '$.body.document.nodes[0].operation',
        message: expect.stringContaining('net-amount v9'),
        node: 'y',
      }),
    ]);
    const stranger = await env.tenant('stranger-a');
    expect((await stranger.call('GET', path)).status).toBe(404);
    const theirs = await stranger.call('POST', '/api/v1/editable-flows', {
      ...echo('net'),
      nodes: [{ id: 'x', operation: 'action:net-amount', config: {} }],
      edges: [{ from: 'trigger', to: 'x' }],
    });
    expect(theirs.status).toBe(201);
    expect((await stranger.call('POST', `/api/v1/editable-flows/${theirs.body.id}/publish`)).status).toBe(400);

    expect((await shop.call('DELETE', path)).status).toBe(204);
    expect((await shop.call('GET', `${path}/versions/2`)).status).toBe(404);
    const gone = await sendWebhook(env.url, 'shop-a', 'net', { total: 10, discount: 2.5 });
    expect(await shop.settledRun(gone.body.runId)).toMatchObject({
      status: 'failed',
      error: { node: 'latest', message: 'there is no action net-amount' },
    });
    // Saved again, the name is a new action: no process runs what it compiled of the deleted one.
    const again = await shop.call('PUT', path, { expression: '{"net": 0}', inputSchema, outputSchema });
    expect(again.body.version).toBe(1);
    const renewed = await sendWebhook(env.url, 'shop-a', 'net', { total: 10, discount: 2.5 });
    expect((await shop.settledRun(renewed.body.runId)).steps.map((step: any) => step.output)).toEqual([
      { net: 0 },
      { net: 0 },
    ]);
  });
});
