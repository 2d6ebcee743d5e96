import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsSlot } from '../engine/redis/key-slots.ts';
import { ioredisOf } from '../engine/redis/redis-client.ts';
import { MAX_CHARGED_CRASHES } from '../engine/queue/run-worker.ts';
import { crash } from './support/crash-operation.ts';
import { Receiver } from './support/receiver.ts';
import { sendWebhook, spawnWorker, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Jobs that never end by themselves: one that kills every worker running it, one lost from the queue; and a run
// whose workers its neighbours kill.
let env: TestPlatform;
let acme: ApiClient;
let receiver: Receiver;
let markers: string;
const workers: ChildProcess[] = [];
const WORKER_ENV = { WORKER_LOCK_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' };
const CRASHING_WORKER = ['--import', 'tsx', 'test/support/crashing-worker.ts'];

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: false },
    { workerLockMs: 2000, workerStalledIntervalMs: 1000 },
    [crash],
  );
  acme = await env.tenant('acme');
  receiver = await new Receiver().start();
  markers = mkdtempSync(path.join(os.tmpdir(), 'tributary-crash-'));
});
afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await env?.close();
  await receiver?.close();
  if (markers) rmSync(markers, { recursive: true, force: true });
});

const flow = (operation: string, config: object = {}) => ({
  key: 'poison',
  name: 'poison',
  trigger: { type: 'webhook' },
  nodes: [{ id: 'boom', operation, config }],
  edges: [{ from: 'trigger', to: 'boom' }],
});

let flowId: string | undefined;
/** Publishes the poison flow with this node: the first time as a new flow, then as its next version. */
async function publishNode(operation: string, config: object = {}) {
  if (!flowId) return void (flowId = await acme.publish(flow(operation, config)));
  const current = (await acme.call('GET', `/api/v1/editable-flows/${flowId}`)).body;
  expect(
    (
      await acme.call('PUT', `/api/v1/editable-flows/${flowId}`, {
        revision: current.revision,
        document: flow(operation, config),
      })
    ).status,
  ).toBe(200);
  expect((await acme.call('POST', `/api/v1/editable-flows/${flowId}/publish`)).status).toBe(201);
}

const finished = (status: string) =>
  ['succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled'].includes(status);

/**
 * Keeps one worker running, as a supervisor would, until every run finishes; returns them and how many workers died.
 * `whileRunning` is called each time a worker is ready.
 */
async function supervise(
  runIds: () => string[],
  command?: string[],
  whileRunning: () => Promise<void> = async () => {},
): Promise<{ runs: any[]; deaths: number }> {
  let deaths = 0;
  for (;;) {
    const { child, ready } = spawnWorker(env.config, WORKER_ENV, command);
    workers.push(child);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await ready.catch(() => {});
    await whileRunning();
    for (;;) {
      const runs = await Promise.all(runIds().map(async (id) => (await acme.call('GET', `/api/v1/runs/${id}`)).body));
      if (runs.every((run) => finished(run.status))) {
        child.kill('SIGKILL');
        await exited;
        return { runs, deaths };
      }
      if (child.exitCode !== null || child.signalCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    deaths++;
    if (deaths > MAX_CHARGED_CRASHES + 6)
      throw new Error(`the runs are still unfinished after ${deaths} worker deaths`);
  }
}

async function superviseUntilFinished(runId: string, command?: string[]): Promise<{ run: any; deaths: number }> {
  const { runs, deaths } = await supervise(() => [runId], command);
  return { run: runs[0], deaths };
}

async function until(condition: () => boolean | Promise<boolean>) {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 100));
}

describe('poison messages', () => {
  it('a job that kills its worker every time ends its run failed, counted and replayable after a fix', async () => {
    await publishNode('test.crash');
    const accepted = await sendWebhook(env.url, 'acme', 'poison', { order: 1 });
    expect(accepted.status).toBe(202);
    const { run, deaths } = await superviseUntilFinished(accepted.body.runId, CRASHING_WORKER);
    // The number docs/concepts.md states: a job that kills its worker while running alone is tried 4 times, then fails.
    expect(deaths).toBe(MAX_CHARGED_CRASHES + 1);
    expect(run).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('crashed the worker 4 times') },
    });
    expect((await acme.call('GET', `/api/v1/messages/${accepted.body.messageId}`)).body.status).toBe('failed');
    const backlog = (await acme.call('GET', '/api/v1/message-queue')).body;
    expect(backlog.runs).toMatchObject({ running: 0, queued: 0, waiting: 0 });

    // After a fix (a version without the crash), the message runs again.
    await publishNode('transform', { expression: '{{ $input.body.order }}' });
    const replayed = await acme.call('POST', `/api/v1/messages/${accepted.body.messageId}/replay`);
    expect(replayed.status).toBe(202);
    const { run: again } = await superviseUntilFinished(replayed.body.id);
    expect(again).toMatchObject({ status: 'succeeded', steps: [{ nodeId: 'boom', output: 1 }] });
  });

  it('a run whose job was lost from the queue is queued again and runs', async () => {
    await publishNode('transform', { expression: '{{ $input.body.order }}' });
    const accepted = await sendWebhook(env.url, 'acme', 'poison', { order: 2 });
    expect(accepted.status).toBe(202);
    // No worker runs now: the run waits in its lane (or as a job, if a killed worker still looked live), and
    // Redis loses it; the store still has it.
    const redis = await ioredisOf(env.platform.queue.queues[0].client);
    const lanes = await redis.keys(`${runsSlot(env.config.redisPrefix)}:runs:fair:*`);
    const removed = await env.platform.queue.queues[0].remove(accepted.body.runId);
    expect(lanes.length + removed).toBeGreaterThan(0);
    if (lanes.length > 0) await redis.del(...lanes);
    expect(await env.platform.queue.queues[0].getJobState(accepted.body.runId)).toBe('unknown');
    const { run } = await superviseUntilFinished(accepted.body.runId);
    expect(run).toMatchObject({ status: 'succeeded', steps: [{ nodeId: 'boom', output: 2 }] });
  });

  it('a run in flight while its neighbours crash the worker goes on: a crash is charged where the evidence points', async () => {
    receiver.slow('/slow', 2500);
    await acme.publish({
      key: 'long',
      name: 'a run waiting on a slow system',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'send', operation: 'http.request', config: { method: 'POST', url: `${receiver.url}/slow` } }],
      edges: [{ from: 'trigger', to: 'send' }],
    });
    await acme.publish({
      key: 'neighbour',
      name: 'a run that kills its worker the first time only',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'boom', operation: 'test.crash', config: { onceMarker: '{{ $input.body.marker }}' } }],
      edges: [{ from: 'trigger', to: 'boom' }],
    });
    const long = await sendWebhook(env.url, 'acme', 'long', { order: 3 });
    expect(long.status).toBe(202);
    const runIds = [long.body.runId];
    const slowRequests = () => receiver.requests.filter((request) => request.url === '/slow');
    // Each worker, once the long run is waiting on the slow system, gets a neighbour that kills it; the long run's
    // workers die with it in flight (today: 4 times, and it failed). After two such crashes it runs alone; the
    // neighbours, each charged once for crashing a worker alone, go on the next time.
    const { runs, deaths } = await supervise(
      () => runIds,
      CRASHING_WORKER,
      async () => {
        const neighbours = runIds.length - 1;
        await until(async () => slowRequests().length > neighbours || finished(await status(long.body.runId)));
        if (neighbours === 4 || finished(await status(long.body.runId))) return;
        const neighbour = await sendWebhook(env.url, 'acme', 'neighbour', {
          marker: path.join(markers, `n${neighbours}`),
        });
        expect(neighbour.status).toBe(202);
        runIds.push(neighbour.body.runId);
      },
    );
    expect(runs[0]).toMatchObject({ status: 'succeeded', steps: [{ nodeId: 'send', output: { status: 200 } }] });
    for (const neighbour of runs.slice(1)) {
      expect(neighbour).toMatchObject({ status: 'succeeded', steps: [{ nodeId: 'boom', output: 'survived' }] });
    }
    expect(deaths).toBe(runIds.length - 1);
    expect(deaths).toBeGreaterThanOrEqual(3);
    // The slow system saw the long run once per worker it ran on, always under one idempotency key.
    expect(slowRequests().length).toBeGreaterThanOrEqual(3);
    expect(new Set(slowRequests().map((request) => request.headers['idempotency-key'])).size).toBe(1);
  });

  it('a job that kills its worker beside other runs is still stopped: it runs alone, then is charged', async () => {
    await publishNode('test.crash');
    const long = await sendWebhook(env.url, 'acme', 'long', { order: 4 });
    const runIds = [long.body.runId];
    const before = receiver.requests.length;
    const { runs, deaths } = await supervise(
      () => runIds,
      CRASHING_WORKER,
      async () => {
        if (runIds.length > 1) return;
        // The poison arrives while the long run is in flight: the first crashes are shared between them.
        await until(() => receiver.requests.length > before);
        const poison = await sendWebhook(env.url, 'acme', 'poison', { order: 5 });
        expect(poison.status).toBe(202);
        runIds.push(poison.body.runId);
      },
    );
    expect(runs[0]).toMatchObject({ status: 'succeeded' });
    expect(runs[1]).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('crashed the worker 4 times while running alone') },
    });
    // Charged 4 times alone, after at most two crashes it shared.
    expect(deaths).toBeGreaterThanOrEqual(MAX_CHARGED_CRASHES + 1);
    expect(deaths).toBeLessThanOrEqual(MAX_CHARGED_CRASHES + 3);
  });
});

async function status(runId: string): Promise<string> {
  return (await acme.call('GET', `/api/v1/runs/${runId}`)).body.status;
}
