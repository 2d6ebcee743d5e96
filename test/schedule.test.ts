import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Platform } from '../bin/platform.ts';
import {
  capturingLogger,
  eventually,
  sendWebhook,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

let env: TestPlatform;
let second: Platform;
let acme: ApiClient;
let receiver: Receiver;

beforeAll(async () => {
  env = await startTestPlatform('postgres');
  // A second worker process on the same store and Redis: a tick must still start one run.
  second = await Platform.start(env.config, { api: false, worker: true }, { logger: capturingLogger().logger });
  acme = await env.tenant('acme');
  receiver = await new Receiver().start();
  await acme.call('PUT', '/api/v1/global-variables/RECEIVER', { value: receiver.url });
});
afterAll(async () => {
  await second?.close();
  await receiver?.close();
  await env?.close();
});

const poll = (
  key: string,
  trigger: object,
  nodes: object[] = [{ id: 'note', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
) => ({
  key,
  name: key,
  trigger: { type: 'schedule', ...trigger },
  nodes,
  edges: [{ from: 'trigger', to: nodes[0] && (nodes[0] as { id: string }).id }],
});
const runsOf = async (flowId: string) =>
  (await acme.call('GET', `/api/v1/runs?flowId=${flowId}&first=200`)).body.nodes as any[];
const schedulers = () => env.platform.schedules.queue.getJobSchedulers();

describe('schedule trigger', () => {
  it('validates cron patterns, time zones and intervals, naming the field', async () => {
    const bad = async (config: object) =>
      (await acme.call('POST', '/api/v1/editable-flows', poll('bad', { config }))).body.errors;
    expect(await bad({ cron: '*/5 * * *' })).toEqual([
      { path: '$.body.trigger.config.cron', message: expect.stringContaining('five fields') },
    ]);
    expect(await bad({ cron: '61 * * * *' })).toEqual([
      { path: '$.body.trigger.config.cron', message: expect.stringContaining('not a valid cron pattern') },
    ]);
    expect(await bad({ cron: '*/5 * * * *', timezone: 'Mars/Olympus' })).toEqual([
      { path: '$.body.trigger.config.timezone', message: expect.stringContaining('Mars/Olympus') },
    ]);
    expect(await bad({ cron: '*/5 * * * *', every: '5m' })).toEqual([
      { path: '$.body.trigger.config', message: 'needs exactly one of cron and every' },
    ]);
    expect(await bad({ every: '5 minutes' })).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: '$.body.trigger.config.every' })]),
    );
    expect(
      (
        await acme.call(
          'POST',
          '/api/v1/editable-flows',
          poll('good', { config: { cron: '*/5 * * * *', timezone: 'Europe/Lisbon' } }),
        )
      ).status,
    ).toBe(201);
  });

  it('starts a run on every tick, one per tick across processes; has no flow URL', async () => {
    const flowId = await acme.publish(poll('ticking', { config: { every: '1s' } }));
    const runs = await eventually(async () => {
      const found = await runsOf(flowId);
      expect(found.filter((run) => run.status === 'succeeded').length).toBeGreaterThanOrEqual(3);
      return found;
    });
    const steps = await Promise.all(
      runs.slice(0, 3).map(async (run) => (await acme.call('GET', `/api/v1/runs/${run.id}`)).body.steps[0].output),
    );
    expect(steps[0]).toEqual({ scheduledAt: expect.any(String), firedAt: expect.any(String) });
    // Two worker processes, one run per scheduled time.
    const times = steps.map((output) => output.scheduledAt);
    expect(new Set(times).size).toBe(times.length);
    expect((await sendWebhook(env.url, 'acme', 'ticking', {})).status).toBe(404);
    await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
  });

  it('a new version replaces the schedule; deactivation removes it and no tick fires after', async () => {
    const flowId = await acme.publish(poll('versions', { config: { every: '1s' } }));
    await eventually(async () => expect((await runsOf(flowId)).length).toBeGreaterThanOrEqual(1));
    const edited = await acme.call('GET', `/api/v1/editable-flows/${flowId}`);
    await acme.call('PUT', `/api/v1/editable-flows/${flowId}`, {
      revision: edited.body.revision,
      document: poll('versions', { config: { cron: '0 0 1 1 *' } }),
    });
    expect((await acme.call('POST', `/api/v1/editable-flows/${flowId}/publish`)).status).toBe(201);
    const mine = async () => (await schedulers()).filter((scheduler: any) => scheduler.key === `flow:acme:${flowId}`);
    expect(await mine()).toEqual([
      expect.objectContaining({
        pattern: '0 0 1 1 *',
        template: expect.objectContaining({ data: { tenantId: 'acme', flowId, flowVersion: 2 } }),
      }),
    ]);
    // Ticks of version 1 still on their way are dropped: no run of version 1 starts from now on.
    const settledCount = await eventually(async () => {
      const runs = await runsOf(flowId);
      expect(runs.every((run) => ['succeeded', 'failed'].includes(run.status))).toBe(true);
      return runs.length;
    });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await runsOf(flowId)).length).toBe(settledCount);

    await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    expect(await mine()).toEqual([]);
    await acme.call('POST', `/api/v1/flows/${flowId}/activate`);
    expect(await mine()).toHaveLength(1);
    await acme.call('DELETE', `/api/v1/editable-flows/${flowId}`);
    expect(await mine()).toEqual([]);
  });

  it('never overlaps: a tick while the previous run is unfinished starts nothing', async () => {
    receiver.slow('/slow', 2500);
    const flowId = await acme.publish(
      poll('slow', { config: { every: '1s' } }, [
        {
          id: 'call',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.RECEIVER }}/slow', body: {} },
          timeoutMs: 10_000,
        },
      ]),
    );
    await eventually(
      async () =>
        expect((await runsOf(flowId)).filter((run) => run.status === 'succeeded').length).toBeGreaterThanOrEqual(2),
      30_000,
    );
    await acme.call('POST', `/api/v1/flows/${flowId}/deactivate`);
    expect(receiver.maxConcurrent('/slow')).toBe(1);
  });
});
