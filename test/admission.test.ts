import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Intake quotas: a tenant over its quota is refused before anything is recorded; others are not.
let env: TestPlatform;
let queuedEnv: TestPlatform;
const clients: Record<string, ApiClient> = {};
const flow = {
  key: 'orders',
  name: 'orders',
  trigger: { type: 'webhook' },
  nodes: [{ id: 'keep', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
  edges: [{ from: 'trigger', to: 'keep' }],
};

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    {
      tenantDeliveriesPerSecond: 1,
      tenantDeliveryBurst: 3,
    },
  );
  for (const tenant of ['noisy', 'calm']) {
    clients[tenant] = await env.tenant(tenant);
    await clients[tenant].publish(flow);
  }
  // No worker: runs stay queued, so the cap on queued runs is reached.
  queuedEnv = await startTestPlatform('postgres', { api: true, worker: false }, { tenantMaxQueuedRuns: 2 });
  clients.backlogged = await queuedEnv.tenant('backlogged');
  await clients.backlogged.publish(flow);
});
afterAll(async () => {
  await env?.close();
  await queuedEnv?.close();
});

describe('intake quotas', () => {
  it("answers 429 with Retry-After over a tenant's delivery rate, records nothing, and leaves others alone", async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, n) => sendWebhook(env.url, 'noisy', 'orders', { n })),
    );
    const accepted = answers.filter((answer) => answer.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted.length + refused.length).toBe(10);
    expect(accepted.length).toBeGreaterThanOrEqual(3);
    expect(refused.length).toBeGreaterThanOrEqual(5);
    for (const answer of refused) {
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(answer.body.detail).toContain('TENANT_DELIVERIES_PER_SECOND');
    }
    const messages = (await clients.noisy.call('GET', '/api/v1/messages?first=50')).body.nodes;
    expect(messages).toHaveLength(accepted.length);

    expect((await sendWebhook(env.url, 'calm', 'orders', { n: 1 })).status).toBe(202);
    const { quota } = (await clients.noisy.call('GET', '/api/v1/dashboard')).body;
    expect(quota).toMatchObject({ perSecond: 1, burst: 3, available: expect.any(Number), maxQueuedRuns: 100_000 });
    expect(quota.available).toBeLessThan(3);

    const operator = await env.operator();
    const scraped = await fetch(`${env.url}/metrics`, {
      headers: {
        authorization: `Basic ${Buffer.from(`${operator.credentials.client_id}:${operator.credentials.client_secret}`).toString('base64')}`,
      },
    });
    const text = await scraped.text();
    expect(text).toMatch(/^tributary_deliveries_total\{tenant="noisy",outcome="throttled"\} [1-9]/m);
    expect(text).toMatch(/^tributary_tenant_delivery_quota_available\{tenant="calm"\} \d+$/m);
  });

  it('answers 429 while a tenant has its cap of runs waiting to start', async () => {
    for (const n of [1, 2]) expect((await sendWebhook(queuedEnv.url, 'backlogged', 'orders', { n })).status).toBe(202);
    const refused = await sendWebhook(queuedEnv.url, 'backlogged', 'orders', { n: 3 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(refused.body.detail).toContain('TENANT_MAX_QUEUED_RUNS');
    const { quota } = (await clients.backlogged.call('GET', '/api/v1/dashboard')).body;
    expect(quota).toMatchObject({ queuedRuns: 2, maxQueuedRuns: 2 });
  });
});
