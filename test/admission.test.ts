import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DeliveryQuota, TenantQuotas } from '../engine/limits/index.ts';
import { runsSlot } from '../engine/redis/index.ts';
import {
  eventually,
  REDIS_URL,
  sendWebhook,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

// Intake quotas: a tenant over its quota is refused before anything is recorded; others are not.
let env: TestPlatform;
let queuedEnv: TestPlatform;
let receiver: Receiver;
const clients: Record<string, ApiClient> = {};
const flow = {
  key: 'orders',
  name: 'orders',
  trigger: { type: 'webhook' },
  nodes: [{ id: 'keep', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
  edges: [{ from: 'trigger', to: 'keep' }],
};

const callFlow = (path: string) => ({
  key: 'call',
  name: 'call',
  trigger: { type: 'webhook' },
  nodes: [{ id: 'call', operation: 'http.request', config: { method: 'POST', url: `${receiver.url}${path}` } }],
  edges: [{ from: 'trigger', to: 'call' }],
});

beforeAll(async () => {
  receiver = await new Receiver().start();
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    { tenantDeliveriesPerSecond: 1, tenantDeliveryBurst: 3, workerConcurrency: 4 },
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
  await receiver?.close();
  await env?.close();
  await queuedEnv?.close();
});

/** Quotas of their own on a Redis connection of their own (one group). */
function quotasOnRedis(deliveries: DeliveryQuota) {
  const redis = new Redis(REDIS_URL);
  const prefix = `quota-test-${randomUUID()}`;
  const quotas = new TenantQuotas(async () => redis, {
    groups: [{ slot: runsSlot(prefix), backlogKey: `${runsSlot(prefix)}:backlog` }],
    groupOf: () => 0,
    deliveries,
  });
  return { redis, prefix, quotas };
}

describe('intake quotas', () => {
  it('repeat a refusal for the rate until the next token without asking Redis, then admit again', async () => {
    const { redis, prefix, quotas } = quotasOnRedis({ perSecond: 4, burst: 1, maxQueuedRuns: 0 });
    const buckets = `${runsSlot(prefix)}:tributary:delivery-buckets`;
    try {
      expect(await quotas.admitDelivery('flood')).toEqual({ admitted: true });
      const refused = await quotas.admitDelivery('flood');
      expect(refused).toMatchObject({ admitted: false, retryAfterSeconds: 1 });
      // Each refusal Redis gives writes the bucket with its time: the ones after it were not Redis's.
      const written = await redis.hget(buckets, 'flood');
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (let i = 0; i < 20; i++) expect(await quotas.admitDelivery('flood')).toEqual(refused);
      expect(await redis.hget(buckets, 'flood')).toBe(written);
      // Another tenant is asked about as before.
      expect(await quotas.admitDelivery('calm')).toEqual({ admitted: true });
      // The next token comes within a quarter of a second.
      await eventually(async () => expect(await quotas.admitDelivery('flood')).toEqual({ admitted: true }), 5000);
    } finally {
      await redis.del(buckets);
      redis.disconnect();
    }
  });

  it('answers deliveries asked for together in the order they came, each tenant by its own quota', async () => {
    // A token a minute: none comes back while the test runs.
    const { redis, prefix, quotas } = quotasOnRedis({ perSecond: 1 / 60, burst: 3, maxQueuedRuns: 0 });
    try {
      await quotas.override('big', { deliveryBurst: 5 });
      // Asked for at once, they go to Redis together (all but the first): each tenant's first ones take its tokens.
      const tenants = ['small', 'big', 'small', 'big', 'small', 'big', 'small', 'big', 'small', 'big', 'big', 'big'];
      const answers = await Promise.all(tenants.map((tenant) => quotas.admitDelivery(tenant)));
      const admitted = (tenant: string) =>
        tenants.flatMap((name, index) => (name === tenant ? [answers[index].admitted] : []));
      expect(admitted('small')).toEqual([true, true, true, false, false]);
      expect(admitted('big')).toEqual([true, true, true, true, true, false, false]);
      expect(await quotas.status('big')).toMatchObject({ burst: 5, available: 0 });
      expect(await quotas.status('other')).toMatchObject({ burst: 3, available: 3 });
      // An override that does not read (written by hand, say) holds up no tenant asked for in the same call.
      await redis.hset(`${runsSlot(prefix)}:tributary:delivery-quotas`, 'garbled', '{"deliveryBurst": nul');
      await redis.hset(`${runsSlot(prefix)}:tributary:delivery-quotas`, 'nulls', '{"deliveryBurst": null}');
      const together = await Promise.all(['garbled', 'nulls', 'other'].map((tenant) => quotas.status(tenant)));
      expect(together.map(({ burst, available }) => [burst, available])).toEqual([
        [3, 3],
        [3, 3],
        [3, 3],
      ]);
    } finally {
      const keys = await redis.keys(`${runsSlot(prefix)}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

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

  it("takes an operator's limits for one tenant: its own quota and concurrency, the others' unchanged", async () => {
    const operator = await env.operator();
    const put = await operator.call('PUT', '/api/v1/tenants/noisy/limits', {
      deliveriesPerSecond: 1000,
      deliveryBurst: 1000,
      concurrency: 1,
    });
    expect(put.status).toBe(200);
    expect(put.body.limits).toEqual({ deliveriesPerSecond: 1000, deliveryBurst: 1000, concurrency: 1 });
    expect((await operator.call('PUT', '/api/v1/tenants/noisy/limits', { weight: 0 })).body.errors).toEqual([
      expect.objectContaining({ path: '$.body.weight' }),
    ]);
    expect((await operator.call('PUT', '/api/v1/tenants/nobody/limits', {})).status).toBe(404);

    receiver.slow('/noisy', 100);
    await clients.noisy.publish({ ...callFlow('/noisy'), key: 'slow' });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, n) => sendWebhook(env.url, 'noisy', 'slow', { n })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202, 202]);
    for (const answer of answers) expect((await clients.noisy.settledRun(answer.body.runId)).status).toBe('succeeded');
    // One at a time, though the worker has four slots.
    expect(receiver.maxConcurrent('/noisy')).toBe(1);
    const { quota } = (await clients.noisy.call('GET', '/api/v1/dashboard')).body;
    expect(quota).toMatchObject({ perSecond: 1000, burst: 1000 });
    expect(((await clients.calm.call('GET', '/api/v1/dashboard')).body.quota as any).perSecond).toBe(1);
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

describe('API call limit', () => {
  it("answers 429 with Retry-After over a tenant's own API call rate; other tenants and operators go on", async () => {
    const chatty = await env.tenant('chatty');
    const operator = await env.operator();
    const put = await operator.call('PUT', '/api/v1/tenants/chatty/limits', { apiCallsPerSecond: 1, apiCallBurst: 3 });
    expect(put.body.limits).toEqual({ apiCallsPerSecond: 1, apiCallBurst: 3 });
    const statuses = [];
    for (let n = 0; n < 6; n++) statuses.push((await chatty.call('GET', '/api/v1/editable-flows')).status);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses).toContain(429);
    const refused = await chatty.call('GET', '/api/v1/editable-flows');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body.detail).toContain('TENANT_API_CALLS_PER_SECOND');
    expect((await clients.calm.call('GET', '/api/v1/editable-flows')).status).toBe(200);
    // An operator looking into the tenant is not counted against it, nor refused.
    expect((await operator.call('GET', '/api/v1/editable-flows', undefined, { tenant_id: 'chatty' })).status).toBe(200);
  });
});

describe('sign-in throttle', () => {
  const tokenRequest = (clientId: string, clientSecret: string) =>
    fetch(`${queuedEnv.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });

  it('refuses a client after repeated wrong secrets, even with the right one, and leaves other clients alone', async () => {
    const target = await queuedEnv.tenant('guessed');
    const { client_id: clientId, client_secret: secret } = target.credentials;
    const statuses = [];
    for (let n = 0; n < 10; n++) statuses.push((await tokenRequest(clientId, `wrong-${n}`)).status);
    expect(statuses).toEqual(Array(10).fill(401));
    const refused = await tokenRequest(clientId, secret);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const other = (await queuedEnv.tenant('bystander')).credentials;
    expect((await tokenRequest(other.client_id, other.client_secret)).status).toBe(200);
  });
});
