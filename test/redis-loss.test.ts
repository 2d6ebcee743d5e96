import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisAnswers } from '../bin/redis.ts';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { forwardWebhook, pollEverySecond } from './support/flow-documents.ts';
import { Receiver } from './support/receiver.ts';

// A Redis of this file's own, without persistence, killed mid-load and started again on an empty
// directory: what a failover to a replica that had not caught up looks like to the platform.
let redis: ChildProcess | undefined;
let dir: string;
let port: number;
let env: TestPlatform;
let acme: ApiClient;
let receiver: Receiver;

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startRedis() {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-redis-'));
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''], {
    stdio: 'ignore',
  });
  await eventually(async () => expect(await redisAnswers(`redis://127.0.0.1:${port}`)).toBe(true));
}

async function killRedis() {
  const exited = new Promise((resolve) => redis!.once('exit', resolve));
  redis!.kill('SIGKILL');
  await exited;
  rmSync(dir, { recursive: true, force: true });
}

beforeAll(async () => {
  port = await freePort();
  await startRedis();
  receiver = await new Receiver().start();
  receiver.slow('/erp', 50);
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    { redisUrl: `redis://127.0.0.1:${port}`, workerConcurrency: 2 },
  );
  acme = await env.tenant('acme');
  await acme.publish(forwardWebhook('orders', `${receiver.url}/erp`));
  await acme.publish(pollEverySecond('poll', `${receiver.url}/tick`));
  // Its staging environment polls too: its schedule is registered again as well.
  await acme.call('POST', '/api/v1/environments', { name: 'staging' });
  await acme.in('staging').publish(pollEverySecond('poll', `${receiver.url}/tick-staging`));
  await acme.publish({
    ...forwardWebhook('keyed', `${receiver.url}/keyed`),
    flowControl: { concurrency: { key: '{{ $input.body.order }}' } },
  });
});
afterAll(async () => {
  await env?.close();
  redis?.kill('SIGKILL');
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Redis comes back empty', () => {
  it("runs every accepted message once per idempotency key; schedules tick again, tenants' limits hold", async () => {
    const operator = await env.operator();
    expect((await operator.call('PUT', '/api/v1/tenants/acme/limits', { deliveryBurst: 12_345 })).status).toBe(200);
    const accepted: string[] = [];
    for (let n = 0; n < 40; n++) {
      const answer = await sendWebhook(env.url, 'acme', 'orders', { n }, { 'Idempotency-Key': `order-${n}` });
      expect(answer.status).toBe(202);
      accepted.push(answer.body.runId);
    }
    // Updates of two orders, each order's in turn (a concurrency key): the lines they wait in are rebuilt too.
    for (let n = 0; n < 10; n++) {
      const answer = await sendWebhook(env.url, 'acme', 'keyed', { order: n % 2, n }, { 'Idempotency-Key': `k-${n}` });
      expect(answer.status).toBe(202);
      accepted.push(answer.body.runId);
    }
    // Most of them are still waiting (two at a time, 50 ms each) when Redis loses everything.
    await killRedis();
    await startRedis();

    for (const runId of accepted) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    const keys = receiver.requests
      .filter((request) => request.url === '/erp')
      .map((request) => request.headers['idempotency-key']);
    // Every message reached the receiver; a run that was in flight may have sent again, with its same key.
    expect(new Set(keys).size).toBe(40);
    const keyed = receiver.requests.filter((request) => request.url === '/keyed').map((r) => JSON.parse(r.body));
    expect(new Set(keyed.map(({ n }) => n)).size).toBe(10);
    // Each order's updates first reached the receiver in the order they were accepted.
    for (const order of [0, 1]) {
      const firsts = [...new Set(keyed.filter((update) => update.order === order).map(({ n }) => n))];
      expect(firsts).toEqual([...firsts].sort((a, b) => a - b));
    }

    const ticks = (path: string) => receiver.requests.filter((request) => request.url === path).length;
    const ticksBefore = { production: ticks('/tick'), staging: ticks('/tick-staging') };
    await eventually(async () => {
      expect(ticks('/tick')).toBeGreaterThan(ticksBefore.production + 1);
      expect(ticks('/tick-staging')).toBeGreaterThan(ticksBefore.staging + 1);
    });
    const ready = await (
      await fetch(`${env.url}/readyz`, { headers: { authorization: `Bearer ${operator.token}` } })
    ).json();
    expect(ready.ready).toBe(true);
    expect(ready.checks.recovery).toMatchObject({ finishedAt: expect.any(String), flowsScheduled: 4 });
    expect(ready.checks.recovery.runsRequeued).toBeGreaterThan(0);
    // The operator's limits were written to Redis again from the store.
    expect((await acme.call('GET', '/api/v1/dashboard')).body.quota.burst).toBe(12_345);
  });

  it('keeps a bulk replay behind the runs of new messages: its priority is rebuilt from the store', async () => {
    let closed = true;
    const ledger = await new Receiver((request) =>
      closed && request.url === '/post' ? { status: 400, body: { error: 'the period is closed' } } : undefined,
    ).start();
    try {
      const ledgerFlow = await acme.publish(forwardWebhook('ledger', `${ledger.url}/post`));
      await acme.publish(forwardWebhook('fresh', `${ledger.url}/fresh`));
      const failed = [];
      for (let n = 0; n < 8; n++) failed.push((await sendWebhook(env.url, 'acme', 'ledger', { n })).body.runId);
      for (const runId of failed) expect((await acme.settledRun(runId)).status).toBe('failed');
      closed = false;

      // The replay (at its lowest priority) and then new messages wait in a paused queue when Redis loses everything.
      const operator = await env.operator();
      await operator.call('POST', '/api/v1/queues/runs/pause');
      const replay = await acme.call('POST', '/api/v1/message-queue/replays', {
        filter: { flowId: ledgerFlow },
        ratePerSecond: 100,
      });
      expect(replay.status).toBe(202);
      await eventually(async () => {
        const { body } = await acme.call('GET', `/api/v1/message-queue/replays/${replay.body.id}`);
        if (body.replayed < 8) throw new Error(`${body.replayed} replayed`);
      });
      const fresh = [];
      for (let n = 0; n < 8; n++) fresh.push((await sendWebhook(env.url, 'acme', 'fresh', { n })).body.runId);
      await killRedis();
      await startRedis();
      // Until the API's connection is back, it answers 503 (Redis does not answer), not 500.
      await eventually(async () =>
        expect((await operator.call('POST', '/api/v1/queues/runs/resume')).status).toBe(200),
      );

      for (const runId of fresh) expect((await acme.settledRun(runId)).status).toBe('succeeded');
      await eventually(async () => expect(ledger.requests.filter((r) => r.url === '/post')).toHaveLength(16));
      // The runs rebuilt from the store start by priority, not by age: the replay's (older) after the new messages',
      // but for those the two workers took before the rest were queued again.
      const lastFresh = Math.max(...ledger.requests.filter((r) => r.url === '/fresh').map((r) => r.receivedAt));
      const replayedBefore = ledger.requests.filter(
        (r) => r.url === '/post' && r.reply?.status === 200 && r.receivedAt < lastFresh,
      );
      expect(replayedBefore.length).toBeLessThanOrEqual(2);
    } finally {
      await ledger.close();
    }
  });
});
