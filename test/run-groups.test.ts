import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareSlots } from '../engine/queue/run-worker.ts';
import { ioredisOf } from '../engine/redis/index.ts';
import { keySlot, runGroupOf, runsSlot } from '../engine/redis/key-slots.ts';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { forwardWebhook } from './support/flow-documents.ts';
import { Receiver } from './support/receiver.ts';

describe('slot groups of the run path', () => {
  it('take tenants by a stable hash, evenly; one group more moves tenants only into it; an operator places one', () => {
    const tenants = Array.from({ length: 3000 }, (_, i) => `tenant-${i}`);
    const counts = [0, 0, 0];
    for (const tenant of tenants) counts[runGroupOf(tenant, 3)]++;
    for (const count of counts) expect(count).toBeGreaterThan(900);
    const moved = tenants.filter((tenant) => runGroupOf(tenant, 3) !== runGroupOf(tenant, 4));
    expect(moved.every((tenant) => runGroupOf(tenant, 4) === 3)).toBe(true);
    expect(moved.length).toBeGreaterThan(600);
    expect(moved.length).toBeLessThan(900);
    expect(runGroupOf('tenant-0', 1)).toBe(0);
    expect(runGroupOf('tenant-0', 3, { 'tenant-0': 2 })).toBe(2);
    // A group past RUN_GROUPS is ignored: the hash's.
    expect(runGroupOf('tenant-0', 3, { 'tenant-0': 7 })).toBe(runGroupOf('tenant-0', 3));
  });

  it("lie each in its own N-th of a cluster's slots, the first where it always was", () => {
    // Redis's own examples of CRC16 key slots.
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('123456789')).toBe(12739);
    for (const prefix of ['tributary', 'bench', 'test-0123']) {
      expect(runsSlot(prefix, 0, 3)).toBe(`{${prefix}:runs}`);
      for (const groups of [2, 3, 4, 6]) {
        const parts = Array.from({ length: groups }, (_, group) =>
          Math.floor(keySlot(runsSlot(prefix, group, groups).slice(1, -1)) / (16384 / groups)),
        );
        expect(new Set(parts).size).toBe(groups);
      }
    }
  });

  it("share a worker's slots: one each, the rest by the tenants waiting in each", () => {
    expect(shareSlots(64, [0])).toEqual([64]);
    expect(shareSlots(12, [0, 0, 0])).toEqual([4, 4, 4]);
    expect(shareSlots(64, [5, 0, 0])).toEqual([62, 1, 1]);
    expect(shareSlots(10, [3, 1, 0])).toEqual([6, 3, 1]);
    // Fewer slots than groups: each still takes runs.
    expect(shareSlots(2, [1, 1, 1])).toEqual([1, 1, 1]);
    for (const waiting of [
      [1, 2, 3],
      [7, 0, 1],
      [0, 0, 9],
    ])
      expect(shareSlots(32, waiting).reduce((sum, slots) => sum + slots, 0)).toBe(32);
  });
});

describe('three slot groups on one Redis', () => {
  let env: TestPlatform;
  let receiver: Receiver;
  const tenants: Record<string, ApiClient> = {};

  beforeAll(async () => {
    receiver = await new Receiver().start();
    env = await startTestPlatform(
      'postgres',
      { api: true, worker: true },
      { runGroups: 3, runGroupTenants: 'flood=0, light=1, lost=2', workerConcurrency: 4, recoveryIntervalMs: 200 },
    );
    for (const tenant of ['flood', 'light', 'lost']) {
      tenants[tenant] = await env.tenant(tenant);
      await tenants[tenant].publish(forwardWebhook('call', `${receiver.url}/${tenant}`));
    }
  });
  afterAll(async () => {
    await env?.close();
    await receiver?.close();
  });

  const send = async (tenant: string, n: number) => {
    const runIds: string[] = [];
    for (let i = 0; i < n; i++) runIds.push((await sendWebhook(env.url, tenant, 'call', { n: i })).body.runId);
    return runIds;
  };

  it("runs each tenant's runs in its group, and a flood in one group leaves another group's tenant its share", async () => {
    receiver.slow('/flood', 300);
    const flood = await send('flood', 30);
    const light = await send('light', 3);
    for (const runId of light) expect((await tenants.light.settledRun(runId)).status).toBe('succeeded');
    for (const runId of flood) expect((await tenants.flood.settledRun(runId)).status).toBe('succeeded');

    const { groups } = env.platform.queue;
    expect(await groups[1].queue.getJobState(light[0])).toBe('completed');
    expect(await groups[0].queue.getJobState(light[0])).toBe('unknown');
    expect(await groups[0].queue.getJobState(flood[0])).toBe('completed');
    // The light tenant's calls came while the flood's backlog was still being worked through.
    const calls = (path: string) => receiver.requests.filter((request) => request.url === path);
    const lastLight = Math.max(...calls('/light').map((request) => request.receivedAt));
    expect(calls('/flood').filter((request) => request.receivedAt < lastLight).length).toBeLessThan(15);
  });

  it("queues a group's runs again from the store when that group alone loses its data", async () => {
    receiver.slow('/lost', 300);
    const runIds = await send('lost', 12);
    await eventually(async () => expect(receiver.requests.some((request) => request.url === '/lost')).toBe(true));
    const { groups } = env.platform.queue;
    const redis = await ioredisOf(groups[0].queue.client);
    const lostKeys = await redis.keys(`${groups[2].slot}*`);
    expect(lostKeys.length).toBeGreaterThan(0);
    // The other groups' keys stay: only this group's epoch is gone.
    expect((await redis.keys(`${groups[0].slot}*`)).length).toBeGreaterThan(0);
    await redis.del(...lostKeys);

    for (const runId of runIds) expect((await tenants.lost.settledRun(runId)).status).toBe('succeeded');
    const delivered = new Set(
      receiver.requests.filter((request) => request.url === '/lost').map((request) => JSON.parse(request.body).n),
    );
    expect(delivered.size).toBe(12);
  });
});

describe('a tenant moved to another slot group while it runs', () => {
  let env: TestPlatform;
  let receiver: Receiver;
  let mover: ApiClient;
  let operator: ApiClient;
  const KEYS = 4;

  beforeAll(async () => {
    receiver = await new Receiver().start();
    receiver.slow('/keyed', 400);
    env = await startTestPlatform(
      'postgres',
      { api: true, worker: true },
      { runGroups: 2, runGroupTenants: 'mover=0', workerConcurrency: 4, recoveryIntervalMs: 200 },
    );
    mover = await env.tenant('mover');
    operator = await env.operator();
    // Each run posts, then waits a second; the runs of one key run one at a time, their waits included.
    await mover.publish({
      key: 'keyed',
      name: 'keyed',
      trigger: { type: 'webhook' },
      flowControl: { concurrency: { key: '{{ $input.body.key }}', limit: 1 } },
      nodes: [
        { id: 'pause', operation: 'wait', config: { for: '1s' } },
        {
          id: 'send',
          operation: 'http.request',
          config: { method: 'POST', url: `${receiver.url}/keyed`, body: '{{ $input.body }}' },
        },
      ],
      edges: [
        { from: 'trigger', to: 'send' },
        { from: 'send', to: 'pause' },
      ],
    });
  });
  afterAll(async () => {
    await env?.close();
    await receiver?.close();
  });

  const send = async (from: number, to: number) => {
    const runIds: string[] = [];
    for (let n = from; n < to; n++)
      runIds.push((await sendWebhook(env.url, 'mover', 'keyed', { n, key: `k${n % KEYS}` })).body.runId);
    return runIds;
  };

  it('takes its waiting and queued runs along, each run once, its keys held throughout, in order', async () => {
    expect((await operator.call('PUT', '/api/v1/tenants/mover/limits', { weight: 3 })).status).toBe(200);
    const before = await send(0, 16);
    // When the move begins, one of its runs executes in group 0 (its post under way), others wait there (holding
    // their keys) and the rest wait for their keys.
    await eventually(async () => {
      expect(receiver.requests.some((request) => request.url === '/keyed' && !request.answeredAt)).toBe(true);
      expect((await mover.call('GET', '/api/v1/runs?status=waiting')).body.nodes.length).toBeGreaterThan(0);
    });
    const path = '/api/v1/platform/run-groups/tenants/mover';
    const moving = await operator.call('PUT', path, { group: 1 });
    expect(moving.status).toBe(202);
    expect(moving.body).toMatchObject({ tenantId: 'mover', group: 1, movingFrom: 0 });
    const during = await send(16, 24);
    await eventually(async () => expect((await operator.call('GET', path)).body.movingFrom).toBeNull());
    const after = await send(24, 28);

    for (const runId of [...before, ...during, ...after])
      expect((await mover.settledRun(runId)).status).toBe('succeeded');
    const posts = receiver.requests.filter((request) => request.url === '/keyed');
    const sent = posts.map((request) => JSON.parse(request.body) as { n: number; key: string });
    expect(sent.map(({ n }) => n).sort((a, b) => a - b)).toEqual(Array.from({ length: 28 }, (_, n) => n));
    for (let key = 0; key < KEYS; key++) {
      const ofKey = posts.filter((_, index) => sent[index].key === `k${key}`);
      // In the order they came, each once the one before it had its answer and waited its second.
      expect(ofKey.map((request) => (JSON.parse(request.body) as { n: number }).n)).toEqual(
        Array.from({ length: 7 }, (_, i) => key + i * KEYS),
      );
      for (let i = 1; i < ofKey.length; i++)
        expect(ofKey[i].receivedAt).toBeGreaterThanOrEqual(ofKey[i - 1].answeredAt! + 1000);
    }

    const { groups } = env.platform.queue;
    // Its weight went along: fair dispatch in its new group reads it there.
    const redis = await ioredisOf(groups[1].queue.client);
    expect(await redis.hget(`${groups[1].queue.toKey('fair')}:weight`, 'mover')).toBe('3');
    for (const runId of after) {
      expect(await groups[1].queue.getJobState(runId)).toBe('completed');
      expect(await groups[0].queue.getJobState(runId)).toBe('unknown');
    }
    expect((await operator.call('GET', '/api/v1/platform/run-groups')).body).toEqual({
      groups: 2,
      tenants: [{ tenantId: 'mover', group: 1, movingFrom: null, since: null }],
    });
    // Moved where it is: nothing to do.
    expect((await operator.call('PUT', path, { group: 1 })).status).toBe(200);
  });

  it('is marked out of the group it left again when that group loses its data, and runs in its own', async () => {
    const { groups } = env.platform.queue;
    const redis = await ioredisOf(groups[0].queue.client);
    const marks = `${groups[0].queue.toKey('fair')}:moving`;
    expect(await redis.hget(marks, 'mover')).toBe('out');
    await redis.del(...(await redis.keys(`${groups[0].slot}*`)));
    // Recovered from the store: a process still sending the tenant there is refused, and sends its runs on.
    await eventually(async () => expect(await redis.hget(marks, 'mover')).toBe('out'));
    const [runId] = await send(28, 29);
    expect((await mover.settledRun(runId)).status).toBe('succeeded');
    expect(await groups[1].queue.getJobState(runId)).toBe('completed');
  });

  it('refuses a group past RUN_GROUPS and an unknown tenant, with the field', async () => {
    const past = await operator.call('PUT', '/api/v1/platform/run-groups/tenants/mover', { group: 2 });
    expect(past.status).toBe(400);
    expect(past.body.errors).toEqual([expect.objectContaining({ path: '$.group' })]);
    const unknown = await operator.call('PUT', '/api/v1/platform/run-groups/tenants/nobody', { group: 0 });
    expect(unknown.status).toBe(404);
    const tenant = await mover.call('PUT', '/api/v1/platform/run-groups/tenants/mover', { group: 0 });
    expect(tenant.status).toBe(403);
  });
});
