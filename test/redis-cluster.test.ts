import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsSlot, ticksSlot } from '../engine/redis/key-slots.ts';
import {
  type ApiClient,
  eventually,
  sendWebhook,
  spawnWorker,
  startSiblingApi,
  startTestPlatform,
  type TestPlatform,
} from './support/harness.ts';
import { forwardWebhook, pollEverySecond } from './support/flow-documents.ts';
import { Receiver } from './support/receiver.ts';
import { freePortRun, LocalRedisCluster } from './support/redis-cluster.ts';
import { deliveryCounts, WebhookSender } from './support/webhook-sender.ts';

// Two API processes and two workers (one in this process, one of its own) on PostgreSQL and a Redis
// Cluster of 3 masters with a replica each.
let cluster: LocalRedisCluster;
let env: TestPlatform;
let secondApi: { url: string; close: () => Promise<void> };
let worker: ReturnType<typeof spawnWorker>;
let acme: ApiClient;
let receiver: Receiver;

beforeAll(async () => {
  cluster = await LocalRedisCluster.start({ basePort: await freePortRun(6), nodeTimeoutMs: 1000 });
  receiver = await new Receiver().start();
  receiver.slow('/erp', 20);
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    { redisClusterNodes: cluster.seeds, workerConcurrency: 4 },
  );
  secondApi = await startSiblingApi(env, {});
  // Both workers hold 4 runs at most, so that a burst leaves runs waiting in their lanes (see the shard's loss).
  worker = spawnWorker(env.config, { REDIS_CLUSTER_NODES: cluster.seeds, WORKER_CONCURRENCY: '4' });
  await worker.ready;
  acme = await env.tenant('acme');
  await acme.publish(forwardWebhook('orders', `${receiver.url}/erp`));
  await acme.publish(pollEverySecond('poll', `${receiver.url}/tick`));
});
afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await secondApi?.close();
  await env?.close();
  await cluster?.stop();
  await receiver?.close();
});

/** An operator's Basic authorization: the dashboard and readiness's details. */
const basicOf = (operator: ApiClient) =>
  `Basic ${Buffer.from(`${operator.credentials.client_id}:${operator.credentials.client_secret}`).toString('base64')}`;

const sender = () => new WebhookSender(() => [env.url, secondApi.url], { tenantId: 'acme', flowKey: 'orders' });

describe('on a Redis Cluster', () => {
  it('runs webhooks through both APIs and both workers; the run queue and the schedules have slots of their own', async () => {
    const { runIds } = await sender().send(0, 30, 50);
    for (const runId of runIds) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    expect(deliveryCounts(receiver, '/erp', 0, 30)).toEqual({
      delivered: 30,
      resentSameKey: 0,
      resentOtherKey: 0,
      lost: 0,
    });
    await eventually(async () =>
      expect(receiver.requests.filter((request) => request.url === '/tick').length).toBeGreaterThan(1),
    );

    const prefix = env.config.redisPrefix;
    const [runsMaster, ticksMaster] = await Promise.all([
      cluster.masterOf(runsSlot(prefix)),
      cluster.masterOf(ticksSlot(prefix)),
    ]);
    expect((await cluster.roles()).masters).toEqual(expect.arrayContaining([runsMaster, ticksMaster]));

    const operator = await env.operator();
    const basic = basicOf(operator);
    const ready = await fetch(`${secondApi.url}/readyz`, { headers: { authorization: basic } });
    const readiness = await ready.json();
    expect(readiness.ready).toBe(true);
    expect(readiness.checks.cluster).toEqual({
      state: 'ok',
      slotsOk: 16384,
      masters: 3,
      replicas: 3,
      failing: 0,
      groups: [{ queue: 'runs', slot: expect.any(Number), master: `127.0.0.1:${runsMaster}` }],
    });
    expect(readiness.checks.liveWorkers).toBe(2);
    // The queues' overview, ours and bull-board's, reads each queue within its own slot.
    const queues = await operator.call('GET', '/api/v1/queues');
    expect(queues.status).toBe(200);
    expect(queues.body.nodes.map((queue: { name: string }) => queue.name).sort()).toEqual(['runs', 'ticks']);
    const board = await fetch(`${env.url}/admin/queues/api/queues`, { headers: { authorization: basic } });
    expect(board.status).toBe(200);
    expect((await board.json()).queues.length).toBe(2);
  });

  it("kill -9 the run queue's master under load: its replica takes over and every accepted message runs, once per key", async () => {
    const before = receiver.requests.length;
    const runsMaster = await cluster.masterOf(runsSlot(env.config.redisPrefix));
    const load = sender().send(100, 60, 20);
    await eventually(async () => expect(receiver.requests.length).toBeGreaterThan(before + 10));
    const killedAt = Date.now();
    cluster.kill(runsMaster);
    await cluster.untilFailedOver(runsMaster);
    const servingAfterMs = Date.now() - killedAt;
    const { runIds, retries } = await load;

    for (const runId of runIds) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    const counts = deliveryCounts(receiver, '/erp', 100, 60);
    console.log(
      `drill: the runs slot's master (port ${runsMaster}) killed; accepted ${runIds.length}, ` +
        `delivered ${counts.delivered}, re-sent with the same key ${counts.resentSameKey}, lost ${counts.lost}; ` +
        `the sender retried ${retries} times; every slot served again ${servingAfterMs} ms after the kill`,
    );
    expect(new Set(runIds).size).toBe(60);
    expect(counts).toMatchObject({ delivered: 60, resentOtherKey: 0, lost: 0 });

    const operator = await env.operator();
    const readiness = await (
      await fetch(`${env.url}/readyz`, { headers: { authorization: basicOf(operator) } })
    ).json();
    expect(readiness.checks.cluster).toMatchObject({ state: 'ok', masters: 3, replicas: 2, failing: 1 });

    // The killed node comes back empty and rejoins as a replica; the platform keeps running.
    await cluster.restart(runsMaster);
    const after = await sender().send(200, 5, 50);
    for (const runId of after.runIds) expect((await acme.settledRun(runId)).status).toBe('succeeded');
  });

  it('a shard loses its data (master and replica killed, back empty): the store queues its runs again', async () => {
    const prefix = env.config.redisPrefix;
    const master = await cluster.masterOf(runsSlot(prefix));
    const shard = [master, ...(await cluster.replicasOf(master))];
    const operator = await env.operator();
    const recoveryNow = async () =>
      (await (await fetch(`${env.url}/readyz`, { headers: { authorization: basicOf(operator) } })).json()).checks
        .recovery;
    const reportBefore = (await recoveryNow())?.since;
    // A slow ERP and a burst: most runs still wait in their lanes when the shard dies.
    receiver.slow('/erp', 300);
    const load = sender().send(300, 40, 200);
    await eventually(async () => expect(deliveryCounts(receiver, '/erp', 300, 40).delivered).toBeGreaterThan(5));
    for (const port of shard) cluster.kill(port);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    for (const port of shard) await cluster.restart(port);
    await cluster.untilServing();
    const { runIds } = await load;

    for (const runId of runIds) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    expect(new Set(runIds).size).toBe(40);
    expect(deliveryCounts(receiver, '/erp', 300, 40)).toMatchObject({ delivered: 40, resentOtherKey: 0, lost: 0 });
    receiver.slow('/erp', 20);
    // The recovery's report lives in the runs' slot: a new one means the loss was noticed, and the runs that outlived
    // it were queued again from the store.
    const recovery = await eventually(async () => {
      const report = await recoveryNow();
      expect(report?.since).not.toBe(reportBefore);
      expect(report?.finishedAt).toBeTruthy();
      return report;
    });
    expect(recovery.runsRequeued).toBeGreaterThan(0);
    // The schedules' slot kept its data unless it is on the same shard; either way they tick again.
    const ticks = receiver.requests.filter((request) => request.url === '/tick').length;
    await eventually(async () =>
      expect(receiver.requests.filter((request) => request.url === '/tick').length).toBeGreaterThan(ticks + 1),
    );
  });
});

describe('on a Redis Cluster, the run path in three slot groups', () => {
  let grouped: TestPlatform;

  beforeAll(async () => {
    grouped = await startTestPlatform(
      'postgres',
      { api: true, worker: true },
      { redisClusterNodes: cluster.seeds, runGroups: 3, runGroupTenants: 'north=0, east=1, south=2' },
    );
  });
  afterAll(async () => {
    await grouped?.close();
  });

  it("runs each tenant's webhooks through its group, each group's slot on a master of its own", async () => {
    const runs = await Promise.all(
      ['north', 'east', 'south'].map(async (tenant) => {
        const client = await grouped.tenant(tenant);
        await client.publish(forwardWebhook('orders', `${receiver.url}/${tenant}`));
        const ids = [];
        for (let n = 0; n < 10; n++) ids.push((await sendWebhook(grouped.url, tenant, 'orders', { n })).body.runId);
        return { client, ids };
      }),
    );
    for (const { client, ids } of runs)
      for (const runId of ids) expect((await client.settledRun(runId)).status).toBe('succeeded');

    const { groups } = grouped.platform.queue;
    const masters = await Promise.all(groups.map((group) => cluster.masterOf(group.slot)));
    expect(new Set(masters).size).toBe(3);
    for (const [index, { ids }] of runs.entries())
      expect(await groups[index].queue.getJobState(ids[0])).toBe('completed');
    const operator = await grouped.operator();
    // Readiness tells operators which master serves each group.
    const readiness = await (
      await fetch(`${grouped.url}/readyz`, { headers: { authorization: basicOf(operator) } })
    ).json();
    expect(
      readiness.checks.cluster.groups.map(({ queue, master }: { queue: string; master: string }) => [
        queue,
        Number(master.split(':').at(-1)),
      ]),
    ).toEqual(groups.map((group, index) => [group.queue.name, masters[index]]));
    const queues = await operator.call('GET', '/api/v1/queues');
    expect(queues.body.nodes.map((queue: { name: string }) => queue.name).sort()).toEqual([
      'runs',
      'runs-1',
      'runs-2',
      'ticks',
    ]);
  });

  it("moves a tenant to another master's group while it runs: every run once, the later ones there", async () => {
    const west = await grouped.tenant('west');
    await west.publish(forwardWebhook('orders', `${receiver.url}/west`));
    const send = async (from: number, to: number) => {
      const ids = [];
      for (let n = from; n < to; n++) ids.push((await sendWebhook(grouped.url, 'west', 'orders', { n })).body.runId);
      return ids;
    };
    const { groups } = grouped.platform.queue;
    const from = grouped.platform.queue.groupOf('west').index;
    const to = (from + 1) % groups.length;
    const before = await send(0, 10);
    const operator = await grouped.operator();
    const path = '/api/v1/platform/run-groups/tenants/west';
    expect((await operator.call('PUT', path, { group: to })).body).toMatchObject({ group: to, movingFrom: from });
    const during = await send(10, 20);
    await eventually(async () => expect((await operator.call('GET', path)).body.movingFrom).toBeNull());
    const after = await send(20, 25);
    for (const runId of [...before, ...during, ...after])
      expect((await west.settledRun(runId)).status).toBe('succeeded');
    const sent = receiver.requests.filter((request) => request.url === '/west').map((r) => JSON.parse(r.body).n);
    expect(sent.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, n) => n));
    for (const runId of after) expect(await groups[to].queue.getJobState(runId)).toBe('completed');
  });
});
