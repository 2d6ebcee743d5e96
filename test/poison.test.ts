import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsSlot } from '../engine/queue/key-slots.ts';
import { ioredisOf } from '../engine/queue/redis-client.ts';
import { MAX_STALLED_COUNT } from '../engine/queue/run-queue.ts';
import { crash } from './support/crash-operation.ts';
import { sendWebhook, spawnWorker, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Jobs that never end by themselves: one that kills every worker running it, one lost from the queue.
let env: TestPlatform;
let acme: ApiClient;
const workers: ChildProcess[] = [];
const WORKER_ENV = { WORKER_LOCK_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' };

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: false },
    { workerLockMs: 2000, workerStalledIntervalMs: 1000 },
    [crash],
  );
  acme = await env.tenant('acme');
});
afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await env?.close();
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

/** Keeps one worker running, as a supervisor would, until the run finishes; returns it and how many workers died. */
async function superviseUntilFinished(runId: string, command?: string[]): Promise<{ run: any; deaths: number }> {
  let deaths = 0;
  for (;;) {
    const { child, ready } = spawnWorker(env.config, WORKER_ENV, command);
    workers.push(child);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await ready.catch(() => {});
    for (;;) {
      const run = (await acme.call('GET', `/api/v1/runs/${runId}`)).body;
      if (finished(run.status)) {
        child.kill('SIGKILL');
        await exited;
        return { run, deaths };
      }
      if (child.exitCode !== null || child.signalCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    deaths++;
    if (deaths > MAX_STALLED_COUNT + 3) throw new Error(`the run is still unfinished after ${deaths} worker deaths`);
  }
}

describe('poison messages', () => {
  it('a job that kills its worker every time ends its run failed, counted and replayable after a fix', async () => {
    await publishNode('test.crash');
    const accepted = await sendWebhook(env.url, 'acme', 'poison', { order: 1 });
    expect(accepted.status).toBe(202);
    const { run, deaths } = await superviseUntilFinished(accepted.body.runId, [
      '--import',
      'tsx',
      'test/support/crashing-worker.ts',
    ]);
    // The number docs/concepts.md states: a job that kills its worker is tried 4 times, then fails.
    expect(deaths).toBe(4);
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
    const redis = await ioredisOf(env.platform.queue.queue.client);
    const lanes = await redis.keys(`${runsSlot(env.config.redisPrefix)}:runs:fair:*`);
    const removed = await env.platform.queue.queue.remove(accepted.body.runId);
    expect(lanes.length + removed).toBeGreaterThan(0);
    if (lanes.length > 0) await redis.del(...lanes);
    expect(await env.platform.queue.queue.getJobState(accepted.body.runId)).toBe('unknown');
    const { run } = await superviseUntilFinished(accepted.body.runId);
    expect(run).toMatchObject({ status: 'succeeded', steps: [{ nodeId: 'boom', output: 2 }] });
  });
});
