import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { ExpressionSandbox } from '../engine/expressions/sandbox.ts';
import { heartbeatKey, workerSlotsKey } from '../engine/queue/heartbeats.ts';
import { ioredisOf } from '../engine/redis/index.ts';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { webhookChain } from './support/flow-documents.ts';
import { Receiver } from './support/receiver.ts';

let env: TestPlatform;
let busy: ApiClient;
let quiet: ApiClient;
let receiver: Receiver;

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    { workerConcurrency: 4, tenantConcurrency: 2 },
  );
  busy = await env.tenant('busy');
  quiet = await env.tenant('quiet');
  receiver = await new Receiver().start();
  receiver.slow('/busy', 300);
  for (const [client, path] of [
    [busy, '/busy'],
    [quiet, '/quiet'],
  ] as const) {
    await client.publish({
      key: 'call',
      name: 'call',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'call',
          operation: 'http.request',
          config: { method: 'POST', url: `${receiver.url}${path}`, body: { n: '{{ $input.body.n }}' } },
        },
      ],
      edges: [{ from: 'trigger', to: 'call' }],
    });
  }
});
afterAll(async () => {
  await receiver?.close();
  await env?.close();
});

describe('per-tenant concurrency', () => {
  it("keeps a busy tenant to its share, so another tenant's run does not wait behind its backlog", async () => {
    const backlog = [];
    for (let n = 0; n < 8; n++) backlog.push((await sendWebhook(env.url, 'busy', 'call', { n })).body.runId);
    const quietRun = (await sendWebhook(env.url, 'quiet', 'call', { n: 0 })).body.runId;

    expect((await quiet.settledRun(quietRun)).status).toBe('succeeded');
    for (const runId of backlog) expect((await busy.settledRun(runId)).status).toBe('succeeded');

    expect(receiver.maxConcurrent('/busy')).toBeLessThanOrEqual(2);
    expect(receiver.requests.filter((request) => request.url === '/busy')).toHaveLength(8);
    const [quietCall] = receiver.requests.filter((request) => request.url === '/quiet');
    const lastBusyCall = Math.max(
      ...receiver.requests.filter((request) => request.url === '/busy').map((request) => request.receivedAt),
    );
    expect(quietCall.receivedAt).toBeLessThan(lastBusyCall);
  });
});

describe('fair dispatch', () => {
  let fair: TestPlatform;
  const clients: Record<string, ApiClient> = {};
  beforeAll(async () => {
    fair = await startTestPlatform('postgres', { api: true, worker: true }, { workerConcurrency: 2 });
    for (const tenant of ['flood', 'light']) {
      const client = (clients[tenant] = await fair.tenant(tenant));
      await client.publish({
        key: 'call',
        name: 'call',
        trigger: { type: 'webhook' },
        nodes: [
          { id: 'call', operation: 'http.request', config: { method: 'POST', url: `${receiver.url}/${tenant}` } },
        ],
        edges: [{ from: 'trigger', to: 'call' }],
      });
    }
    receiver.slow('/flood', 100);
  });
  afterAll(() => fair?.close());

  it("starts a tenant's run ahead of another tenant's backlog, with no limit set", async () => {
    const backlog = await Promise.all(
      Array.from({ length: 30 }, async (_, n) => (await sendWebhook(fair.url, 'flood', 'call', { n })).body.runId),
    );
    const acceptedAt = Date.now();
    const lightRun = (await sendWebhook(fair.url, 'light', 'call', {})).body.runId;
    expect((await clients.light.settledRun(lightRun)).status).toBe('succeeded');

    const [lightCall] = receiver.requests.filter((request) => request.url === '/light');
    const floodCallsBetween = receiver.requests.filter(
      (request) =>
        request.url === '/flood' && request.receivedAt >= acceptedAt && request.receivedAt <= lightCall.receivedAt,
    );
    // First come, first served, the light run would wait for the whole backlog (about 28 calls): here it
    // waits only for the runs the two slots take while its delivery is being accepted (a call lasts 100 ms;
    // on a loaded machine acceptance can outlast one or two), and the one handed out ahead of them.
    expect(floodCallsBetween.length).toBeLessThanOrEqual(6);
    for (const runId of backlog) expect((await clients.flood.settledRun(runId)).status).toBe('succeeded');
  });
});

describe("a flow's concurrency", () => {
  it("runs a flow's runs one at a time, without holding the tenant's other flows", async () => {
    const env2 = await startTestPlatform('postgres', { api: true, worker: true }, { workerConcurrency: 3 });
    try {
      const tenant = await env2.tenant('erp');
      receiver.slow('/serial', 100);
      const call = (key: string, concurrency?: number) => ({
        key,
        name: key,
        ...(concurrency && { concurrency }),
        trigger: { type: 'webhook' },
        nodes: [{ id: 'call', operation: 'http.request', config: { method: 'POST', url: `${receiver.url}/${key}` } }],
        edges: [{ from: 'trigger', to: 'call' }],
      });
      await tenant.publish(call('serial', 1));
      await tenant.publish(call('free'));
      const serial = [];
      for (let n = 0; n < 5; n++) serial.push((await sendWebhook(env2.url, 'erp', 'serial', { n })).body.runId);
      const free = (await sendWebhook(env2.url, 'erp', 'free', {})).body.runId;
      expect((await tenant.settledRun(free)).status).toBe('succeeded');
      for (const runId of serial) expect((await tenant.settledRun(runId)).status).toBe('succeeded');
      expect(receiver.maxConcurrent('/serial')).toBe(1);
      const lastSerial = Math.max(...receiver.requests.filter((r) => r.url === '/serial').map((r) => r.receivedAt));
      const [freeCall] = receiver.requests.filter((r) => r.url === '/free');
      expect(freeCall.receivedAt).toBeLessThan(lastSerial);
    } finally {
      await env2.close();
    }
  });
});

describe('runs back from a wait', () => {
  it("leave a worker's reserved slot to another tenant while dispatch still counts a dead worker's slots", async () => {
    // 10 slots, 10 % reserved: one tenant's runs hold at most 9 of them. Calls to /flood hang until released.
    const hanging = await new Receiver((request) => (request.url === '/flood' ? 'hang' : undefined)).start();
    const back = await startTestPlatform(
      'postgres',
      { api: true, worker: true },
      { workerConcurrency: 10, reservedSlotsPercent: 10, outboundStartConcurrency: 64 },
    );
    try {
      const flood = await back.tenant('flood');
      const light = await back.tenant('light');
      const call = (path: string) => ({
        id: 'call',
        operation: 'http.request',
        config: { method: 'POST', url: `${hanging.url}${path}` },
      });
      await flood.publish(
        webhookChain('pause', [{ id: 'pause', operation: 'wait', config: { for: '1s' } }, call('/flood')]),
      );
      await light.publish(webhookChain('call', [call('/light')]));
      // A worker killed a moment ago, as dispatch sees it until its heartbeat is DISPATCH_TTL_MS old (here, for ever):
      // its 100 slots count, so that by dispatch's count the flood may hold 99 executing slots.
      const [queue] = back.platform.queue.queues;
      const redis = await ioredisOf(queue.client);
      await redis.zadd(heartbeatKey(queue), Date.now() + 600_000, 'killed');
      await redis.hset(workerSlotsKey(queue), { killed: 100, 'killed:c': 100 });

      for (let n = 0; n < 20; n++) await sendWebhook(back.url, 'flood', 'pause', { n });
      // The flood's runs come back from their wait: 9 hang on their call, the others are deferred.
      await eventually(async () => {
        if (hanging.requests.filter((request) => request.url === '/flood').length < 9) throw new Error('not yet');
      });
      await sendWebhook(back.url, 'light', 'call', {});
      await eventually(async () => {
        if (!hanging.requests.some((request) => request.url === '/light')) throw new Error('the light run waits');
      }, 15_000);
      expect(hanging.requests.filter((request) => request.url === '/flood')).toHaveLength(9);
    } finally {
      // The hanging calls fail at once rather than hold the worker's close for its grace period.
      hanging.release();
      await back.close();
      await hanging.close();
    }
  });
});

const sandboxOf = (limits: { timeoutMs: number; processes: number }) =>
  new ExpressionSandbox({ memoryMb: 64, maxDepth: 100, maxResultBytes: 1 << 20, ...limits });

/** This process's children that are expression sandbox processes (Linux: /proc). */
function sandboxPids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return parent === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sandbox-process');
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('the expression sandbox', () => {
  it("serves tenants in turn: one tenant's backlog of sandboxed expressions does not hold another's", async () => {
    const sandbox = sandboxOf({ timeoutMs: 5000, processes: 1 });
    try {
      const finished: string[] = [];
      // A lambda sends each expression to the sandbox; one process evaluates them one at a time.
      const evaluate = (tenant: string, n: number) =>
        sandbox
          .evaluate('$map([$input.n], function($v) { $v })', { input: { n } }, { tenant })
          .then(() => finished.push(`${tenant}${n}`));
      await Promise.all([1, 2, 3, 4, 5].map((n) => evaluate('busy', n)).concat(evaluate('quiet', 1)));
      // busy1 was sent at once; then the turns alternate while both tenants wait.
      expect(finished).toEqual(['busy1', 'busy2', 'quiet1', 'busy3', 'busy4', 'busy5']);
    } finally {
      sandbox.close();
    }
  });

  it('evaluates at a lower CPU priority than the process that serves every tenant', async () => {
    const sandbox = sandboxOf({ timeoutMs: 5000, processes: 2 });
    try {
      await Promise.all(
        ['a', 'b'].map((tenant) => sandbox.evaluate('$map([1, 2], function($v) { $v })', {}, { tenant })),
      );
      const sandboxes = sandboxPids();
      expect(sandboxes.length).toBeGreaterThanOrEqual(2);
      for (const pid of sandboxes) expect(os.getPriority(pid)).toBe(Math.min(19, os.getPriority() + 10));
    } finally {
      sandbox.close();
    }
  });

  it('holds an evaluation to the CPU it used, not the time it waited for a CPU; a runaway one still stops', async () => {
    const sandbox = sandboxOf({ timeoutMs: 400, processes: 1 });
    try {
      await sandbox.evaluate('$map([1], function($v) { $v })', {}, { tenant: 'a' });
      const [pid] = sandboxPids();
      // The process gets no CPU for 700 ms, as on a machine busy with other work, while it evaluates.
      const evaluating = sandbox.evaluate('$count($map([1..20000], function($v) { $v * 2 }))', {}, { tenant: 'a' });
      process.kill(pid, 'SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, 700));
      process.kill(pid, 'SIGCONT');
      expect(await evaluating).toBe(20000);
      await expect(
        sandbox.evaluate('$sum([1..900].($sum($map([1..900], function($v) { $v * 2 }))))', {}, { tenant: 'a' }),
      ).rejects.toThrow(/ran past the limit of 400 ms/);
    } finally {
      sandbox.close();
    }
  });
});
