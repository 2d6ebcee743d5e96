import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Platform } from '../bin/platform.ts';
import {
  capturingLogger,
  POSTGRES_URL,
  eventually,
  sendWebhook,
  spawnWorker,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import { webhookChain } from './support/flow-documents.ts';
import { Receiver } from './support/receiver.ts';
import { importFlowDocument, refundFlow, refundWorld } from './support/refund-fixture.ts';

// Separate API and worker processes on PostgreSQL, as in production.
let env: TestPlatform;
let acme: ApiClient;
let receiver: Receiver;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: false },
    { workerLockMs: 2000, workerStalledIntervalMs: 1000 },
  );
  acme = await env.tenant('acme');
  receiver = await new Receiver().start();
  await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: receiver.url });
});
afterAll(async () => {
  await stopWorkers();
  await receiver?.close();
  await env?.close();
});

/** A worker process on the test's schema and Redis prefix, with short locks; resolves once it consumes. */
async function startWorker(): Promise<ChildProcess> {
  const { child, ready } = spawnWorker(env.config, { WORKER_LOCK_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' });
  workers.push(child);
  await ready;
  return child;
}

async function stopWorkers() {
  for (const worker of workers.splice(0)) {
    if (worker.exitCode !== null || worker.signalCode !== null) continue;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
}

const received = (path: string) => receiver.requests.filter((request) => request.url === path);
const post = (id: string, path: string) => ({
  id,
  operation: 'http.request',
  config: { method: 'POST', url: `{{ $vars.ERP_URL }}${path}`, body: { order: '{{ $input.body.id }}' } },
  timeoutMs: 600_000,
});

describe('durability', () => {
  it('finishes a run whose worker was killed mid-run, without repeating completed nodes', async () => {
    receiver.script({ status: 200 }, 'hang');
    await acme.publish({
      key: 'crash',
      name: 'crash',
      trigger: { type: 'webhook' },
      nodes: [post('first', '/first'), post('second', '/second')],
      edges: [
        { from: 'trigger', to: 'first' },
        { from: 'first', to: 'second' },
      ],
    });
    const doomed = await startWorker();
    const accepted = await sendWebhook(env.url, 'acme', 'crash', { id: 77 });
    expect(accepted.status).toBe(202);
    // The first side effect is done and checkpointed; the worker now hangs inside the second.
    await eventually(async () => expect(received('/second')).toHaveLength(1));
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));

    await startWorker();
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.attempts).toBe(2);
    expect(received('/first')).toHaveLength(1);
    expect(received('/second')).toHaveLength(2);
    expect(received('/second').map((request) => request.headers['idempotency-key'])).toEqual([
      `${run.messageId}.second`,
      `${run.messageId}.second`,
    ]);
  });

  it('a worker killed in the middle of a loop: after recovery no item is sent twice but the one in flight, none is lost', async () => {
    receiver.script({ status: 200 }, { status: 200 }, 'hang');
    await acme.publish({
      key: 'crash-loop',
      name: 'crash-loop',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'each',
          operation: 'loop',
          config: { items: '{{ $input.body.items }}', concurrency: 1 },
          nodes: [
            {
              ...post('send', '/loop-items'),
              config: { method: 'POST', url: '{{ $vars.ERP_URL }}/loop-items', body: '{{ $item }}' },
            },
          ],
        },
      ],
      edges: [{ from: 'trigger', to: 'each' }],
    });
    // The only worker: the one killed holds the run.
    await stopWorkers();
    const doomed = await startWorker();
    const items = [0, 1, 2, 3, 4].map((n) => ({ n }));
    const accepted = await sendWebhook(env.url, 'acme', 'crash-loop', { items });
    // Items 0 and 1 are done and checkpointed; the worker now hangs inside item 2.
    await eventually(async () => expect(received('/loop-items')).toHaveLength(3));
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));

    await startWorker();
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    const sent = received('/loop-items');
    expect(sent.map((request) => JSON.parse(request.body))).toEqual([
      items[0],
      items[1],
      items[2],
      items[2],
      items[3],
      items[4],
    ]);
    // The item in flight went again with the same idempotency key, so the receiver can drop the repeat.
    expect(sent.map((request) => request.headers['idempotency-key'])).toEqual(
      [0, 1, 2, 2, 3, 4].map((index) => `${run.messageId}.each[${index}].send`),
    );
    expect(run.steps.find((step: { key: string }) => step.key === 'each').output.results).toHaveLength(5);
  });

  it('a run waiting while its worker is killed goes on after the wait with the next worker, once', async () => {
    await stopWorkers();
    await acme.publish({
      key: 'wait-restart',
      name: 'wait-restart',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'pause', operation: 'wait', config: { for: '3s' } }, post('after', '/after-restart')],
      edges: [
        { from: 'trigger', to: 'pause' },
        { from: 'pause', to: 'after' },
      ],
    });
    const doomed = await startWorker();
    const accepted = await sendWebhook(env.url, 'acme', 'wait-restart', { id: 5 });
    await eventually(async () =>
      expect((await acme.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body.status).toBe('waiting'),
    );
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));

    await startWorker();
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(received('/after-restart')).toHaveLength(1);
    // The wait was not started again by the new worker: it ends when the first pass said.
    const { until } = run.steps.find((step: { key: string }) => step.key === 'pause').output;
    expect(received('/after-restart')[0].receivedAt).toBeGreaterThanOrEqual(Date.parse(until));
    expect(run.steps.filter((step: { key: string }) => step.key === 'pause/due')).toHaveLength(1);
  });

  it('a worker killed while a run waits for the flow it called: both go on with the next worker, the call made once', async () => {
    await stopWorkers();
    await acme.publish(
      webhookChain('slow-child', [
        { id: 'pause', operation: 'wait', config: { for: '3s' } },
        { id: 'double', operation: 'transform', config: { expression: "{{ {'doubled': $input.body.n * 2} }}" } },
      ]),
    );
    await acme.publish(
      webhookChain('slow-parent', [
        { id: 'call', operation: 'call', config: { flow: 'slow-child', input: { n: '{{ $input.body.n }}' } } },
        {
          ...post('send', '/sub-results'),
          config: { method: 'POST', url: '{{ $vars.ERP_URL }}/sub-results', body: '{{ $steps.call }}' },
        },
      ]),
    );
    const doomed = await startWorker();
    const accepted = await sendWebhook(env.url, 'acme', 'slow-parent', { n: 4 });
    const runStatus = async (id: string) => (await acme.call('GET', `/api/v1/runs/${id}`)).body.status;
    const [child] = await eventually(async () => {
      const found = (await acme.call('GET', `/api/v1/runs?parentRunId=${accepted.body.runId}`)).body.nodes;
      expect(found).toHaveLength(1);
      expect(await runStatus(found[0].id)).toBe('waiting');
      expect(await runStatus(accepted.body.runId)).toBe('waiting');
      return found;
    });
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));

    await startWorker();
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(received('/sub-results').map((request) => JSON.parse(request.body))).toEqual([{ doubled: 8 }]);
    expect(
      (await acme.call('GET', `/api/v1/runs?parentRunId=${run.id}`)).body.nodes.map((r: { id: string }) => r.id),
    ).toEqual([child.id]);
  });

  it('a worker killed between the ERP receipt and the order mark: one ERP receipt, marked after recovery', async () => {
    const world = await refundWorld(acme);
    try {
      await acme.publish(refundFlow('refunds'));
      const shop = world.shopify.shop;
      const placed = shop.createOrder({ lines: [{ title: 'Chair', price: 80, quantity: 1 }], synced: true });
      const { webhookBody } = shop.createRefund(placed.id, { lines: [{ line: 0, quantity: 1 }] });
      world.shopify.hang('metafieldsSet');
      await stopWorkers();
      const doomed = await startWorker();
      const accepted = await world.deliver(env.url, 'refunds', webhookBody);
      expect(accepted.status).toBe(202);
      // The ERP has the record; the worker is stuck marking the order.
      await eventually(async () => expect(world.shopify.held).toBe(1));
      expect(world.erp.receipts()).toHaveLength(1);
      doomed.kill('SIGKILL');
      await new Promise((resolve) => doomed.once('exit', resolve));
      world.shopify.release();

      await startWorker();
      const run = await acme.settledRun(accepted.body.runId);
      expect(run.status).toBe('succeeded');
      expect(world.erp.receipts()).toHaveLength(1);
      expect(world.erp.receipts()[0]).toMatchObject({ OrderId: placed.id });
      expect(shop.orders.get(placed.id)!.tags).toEqual(['IPaaS Refunds Exported: 1']);
    } finally {
      await world.close();
    }
  });

  it('a worker killed mid-batch: the batch completes after recovery, every refund reaches the ERP once', async () => {
    const world = await refundWorld(acme, { shop: { restoreRate: 1000, maximumAvailable: 10_000 } });
    try {
      const shop = world.shopify.shop;
      const orders = Array.from({ length: 12 }, (_, i) =>
        shop.createOrder({ lines: [{ title: `Lamp ${i}`, price: 20, quantity: 1 }], synced: true }),
      );
      const refunds = orders.map((order) => shop.createRefund(order.id, { lines: [{ line: 0, quantity: 1 }] }).refund);
      // The ERP takes five records, then stops answering: the sends in flight when the worker dies get no answer.
      world.erp.script(
        ...[1, 2, 3, 4, 5].map((n) => ({ status: 200, body: { ok: n } })),
        ...Array.from({ length: 20 }, () => 'hang' as const),
      );
      await stopWorkers();
      const doomed = await startWorker();
      const document = { ...importFlowDocument(), key: 'crash-import' };
      const flowId = await acme.publish(document);
      // Five tasks are done; the others hang in their sends.
      await eventually(async () => {
        const [batch] = (await acme.call('GET', `/api/v1/batches?flowId=${flowId}`)).body.nodes;
        expect(batch?.counts.succeeded).toBe(5);
        expect(world.erp.requests.length).toBeGreaterThanOrEqual(6);
      });
      doomed.kill('SIGKILL');
      await new Promise((resolve) => doomed.once('exit', resolve));
      world.erp.release();

      await startWorker();
      const batch = await eventually(async () => {
        const [oldest] = (await acme.call('GET', `/api/v1/batches?flowId=${flowId}`)).body.nodes.slice(-1);
        expect(oldest.status).toBe('succeeded');
        return oldest;
      }, 90_000);
      await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
      expect(batch.counts).toMatchObject({ total: 12, succeeded: 12 });
      // Every refund reached the ERP once: the sends cut off by the crash were never answered, and were sent again.
      const receipts = world.erp.receipts() as any[];
      expect(receipts.map((record) => record.Refund.Id).sort()).toEqual(refunds.map((refund) => refund.id).sort());
      for (const order of orders) expect(shop.orders.get(order.id)!.tags).toEqual(['IPaaS Refunds Exported: 1']);
    } finally {
      await world.close();
    }
  });

  it('drains on SIGTERM: the run in flight finishes, then the worker exits', async () => {
    receiver.script({ status: 200, delayMs: 1500 });
    await acme.publish({
      key: 'drain',
      name: 'drain',
      trigger: { type: 'webhook' },
      nodes: [post('slow', '/drain')],
      edges: [{ from: 'trigger', to: 'slow' }],
    });
    await stopWorkers();
    const worker = await startWorker();
    const accepted = await sendWebhook(env.url, 'acme', 'drain', { id: 8 });
    await eventually(async () => expect(received('/drain')).toHaveLength(1));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
    const run = (await acme.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body;
    expect(run).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(received('/drain')).toHaveLength(1);
    await startWorker(); // for the tests that follow
  });

  it('hands a run back on SIGTERM past the grace without charging its node an attempt', async () => {
    receiver.script('hang');
    await acme.publish({
      key: 'deploy',
      name: 'deploy',
      trigger: { type: 'webhook' },
      // One attempt only: a deploy that charged it would fail the run.
      nodes: [{ ...post('slow', '/deploy'), retry: { maxAttempts: 1 } }],
      edges: [{ from: 'trigger', to: 'slow' }],
    });
    await stopWorkers();
    const { child: worker, ready } = spawnWorker(env.config, {
      WORKER_LOCK_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      SHUTDOWN_GRACE_MS: '300',
    });
    workers.push(worker);
    await ready;
    const accepted = await sendWebhook(env.url, 'acme', 'deploy', { id: 9 });
    await eventually(async () => expect(received('/deploy')).toHaveLength(1));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
    receiver.release();
    await startWorker();
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps).toMatchObject([{ nodeId: 'slow', status: 'succeeded', attempts: 1 }]);
    expect(received('/deploy')).toHaveLength(2);
  });

  it('answers 503 when Redis is down, and loses nothing when the sender retries', async () => {
    const { logger } = capturingLogger();
    const broken = await Platform.start(
      { ...env.config, redisUrl: 'redis://127.0.0.1:1' },
      { api: true, worker: false },
      { logger },
    );
    try {
      await acme.publish({
        key: 'outage',
        name: 'outage',
        trigger: { type: 'webhook' },
        nodes: [post('send', '/outage')],
        edges: [{ from: 'trigger', to: 'send' }],
      });
      const refused = await sendWebhook(broken.url, 'acme', 'outage', { id: 5 }, { 'Idempotency-Key': 'outage-1' });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
    } finally {
      await broken.close();
    }
    const retried = await sendWebhook(env.url, 'acme', 'outage', { id: 5 }, { 'Idempotency-Key': 'outage-1' });
    // The refusal recorded nothing (the quota could not be checked before storing), so this is the first acceptance.
    expect(retried.status).toBe(202);
    const run = await acme.settledRun(retried.body.runId);
    expect(run.status).toBe('succeeded');
    expect(received('/outage')).toHaveLength(1);
  });

  it('tells an anonymous caller only that the store failed when PostgreSQL goes away; the log has why', async () => {
    // PostgreSQL behind a proxy this test cuts: the store's connections break, as when the server stops.
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(new URL(POSTGRES_URL).port || 5432), new URL(POSTGRES_URL).hostname);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(POSTGRES_URL);
    proxied.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const { logger, lines } = capturingLogger();
    const cut = await Platform.start(
      { ...env.config, databaseUrl: proxied.toString() },
      { api: true, worker: false },
      { logger },
    );
    try {
      expect(await (await fetch(`${cut.url}/readyz`)).json()).toEqual({ ready: true, failed: [] });
      proxy.close();
      for (const socket of sockets) socket.destroy();
      const answer = await fetch(`${cut.url}/readyz`);
      expect(answer.status).toBe(503);
      expect(await answer.json()).toEqual({ ready: false, failed: ['store'] });
      expect(lines.join('\n')).toContain('readiness: the store does not answer');
    } finally {
      await cut.close().catch(() => {});
    }
  });

  it('reports readiness from the store, Redis and live workers: the details to operators only', async () => {
    const operator = await env.operator();
    const headers = { authorization: `Bearer ${operator.token}` };
    const ready = await (await fetch(`${env.url}/readyz`, { headers })).json();
    expect(ready).toMatchObject({
      ready: true,
      failed: [],
      checks: { store: 'ok', redis: 'ok', maxmemoryPolicy: 'noeviction' },
    });
    expect(ready.checks.liveWorkers).toBeGreaterThanOrEqual(1);
    expect(await (await fetch(`${env.url}/readyz`)).json()).toEqual({ ready: true, failed: [] });
  });
});
