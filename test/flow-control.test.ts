import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, type ReceivedRequest } from './support/receiver.ts';
import { forwardWebhook } from './support/flow-documents.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Keys per business object: runs about one order wait for one another, whichever flow they belong to, and a burst of
// messages about one object runs once.
const ORDERS = 30;
const SERVICE_MS = 25;
const LOOKUP_MS = 150;

let env: TestPlatform;
let acme: ApiClient;
let erp: Receiver;

/** A flow that posts its message to the ERP stand-in, its runs keyed by the order they are about. */
const orderFlow = (key: string, concurrency: object) => ({
  ...forwardWebhook(key, `${erp.url}/orders`, { retry: { maxAttempts: 3, backoffMs: 300 } }),
  flowControl: { concurrency },
});

/** The same, looking the order up first: without keys its post would reach the ERP after the update's. */
function lookingUpFlow(key: string, concurrency: object) {
  const flow = orderFlow(key, concurrency);
  const lookup = { id: 'lookup', operation: 'http.request', config: { method: 'GET', url: `${erp.url}/lookup` } };
  return {
    ...flow,
    nodes: [lookup, ...flow.nodes],
    edges: [
      { from: 'trigger', to: 'lookup' },
      { from: 'lookup', to: 'send' },
    ],
  };
}

async function deliver(key: string, body: object) {
  const answer = await sendWebhook(env.url, 'acme', key, body);
  expect(answer.status).toBe(202);
  return answer.body as { messageId: string; runId: string };
}

const about = (request: ReceivedRequest) => JSON.parse(request.body) as { id: string; kind: string };

describe('flow control, on PostgreSQL', () => {
  beforeAll(async () => {
    erp = await new Receiver().start();
    erp.slow('/orders', SERVICE_MS);
    erp.slow('/lookup', LOOKUP_MS);
    env = await startTestPlatform('postgres');
    acme = await env.tenant('acme');
  });
  afterAll(async () => {
    await erp?.close();
    await env?.close();
  });

  it("serialises a tenant's create and update flows per order: each order's create first, none overlapping", async () => {
    const key = { key: '{{ $input.body.id }}', scope: 'tenant' };
    await acme.publish(lookingUpFlow('order-created', key));
    await acme.publish(orderFlow('order-updated', key));
    // The first lookup fails and is retried after a wait: its order's update waits for it all the same.
    erp.script({ status: 503, body: { error: 'busy' } });
    const orders = Array.from({ length: ORDERS }, (_, i) => `order-${i}`);
    const runs = (
      await Promise.all(
        orders.map(async (id) => [
          await deliver('order-created', { id, kind: 'create' }),
          await deliver('order-updated', { id, kind: 'update' }),
        ]),
      )
    ).flat();
    for (const { runId } of runs) expect((await acme.settledRun(runId)).status).toBe('succeeded');

    const posts = erp.requests.filter((request) => request.url === '/orders');
    expect(posts).toHaveLength(2 * ORDERS);
    expect(erp.requests).toHaveLength(3 * ORDERS + 1);
    for (const id of orders) {
      const [create, update] = posts.filter((request) => about(request).id === id);
      expect([about(create).kind, about(update).kind]).toEqual(['create', 'update']);
      // The update's run started after the create's ended: its post arrived once the create's was answered.
      expect(update.receivedAt).toBeGreaterThanOrEqual(create.answeredAt!);
    }
    // Orders ran side by side: the key serialises each order, not the flows.
    const alongside = posts.map(
      ({ receivedAt }) => posts.filter((post) => post.receivedAt <= receivedAt && receivedAt < post.answeredAt!).length,
    );
    expect(Math.max(...alongside)).toBeGreaterThan(1);
  });

  it("holds a flow's key for the runs other flows call: a called update waits behind its order's create", async () => {
    const key = { key: '{{ $input.body.id }}', scope: 'tenant' };
    await acme.publish(lookingUpFlow('order-placed', key));
    await acme.publish(orderFlow('order-amended', key));
    await acme.publish({
      key: 'order-events',
      name: 'order-events',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'call', operation: 'call', config: { flow: 'order-amended', input: '{{ $input.body }}' } }],
      edges: [{ from: 'trigger', to: 'call' }],
    });
    const before = erp.requests.length;
    const orders = ['order-a', 'order-b', 'order-c'];
    const runs = [];
    for (const id of orders)
      runs.push(
        await deliver('order-placed', { id, kind: 'create' }),
        await deliver('order-events', { id, kind: 'update' }),
      );
    for (const { runId } of runs) expect((await acme.settledRun(runId)).status).toBe('succeeded');

    const posts = erp.requests.slice(before).filter((request) => request.url === '/orders');
    for (const id of orders) {
      const [create, update] = posts.filter((request) => about(request).id === id);
      expect([about(create).kind, about(update).kind]).toEqual(['create', 'update']);
      expect(update.receivedAt).toBeGreaterThanOrEqual(create.answeredAt!);
    }
    // The called run carries its key as a delivered one does.
    const { body } = await acme.call('GET', `/api/v1/runs?parentRunId=${runs[1].runId}`);
    expect(body.nodes).toMatchObject([{ concurrency: { key: 'order-a', scope: 'tenant', limit: 1 } }]);
  });

  it('fails a run whose message gives no key, saying so; a key reading more than the message is refused at publish', async () => {
    await acme.publish(orderFlow('order-paid', { key: '{{ $input.body.order.id }}' }));
    const { runId } = await deliver('order-paid', { id: 'order-1' });
    const run = await acme.settledRun(runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({
      kind: 'permanent',
      message: 'the key flowControl.concurrency.key gave nothing for this message, not a string or a number',
    });
    // A key the store could not keep (a NUL made by the expression) fails its run alone.
    await acme.publish(orderFlow('order-voided', { key: "{{ $decodeUrlComponent('%00') & $input.body.id }}" }));
    const voided = await acme.settledRun((await deliver('order-voided', { id: 'order-1' })).runId);
    expect(voided).toMatchObject({ status: 'failed', concurrency: null });
    expect(voided.error.message).toMatch(
      /^the key flowControl\.concurrency\.key gave a key that contains the character/,
    );
    const keyed = await deliver('order-paid', { order: { id: 7 } });
    const succeeded = await acme.settledRun(keyed.runId);
    expect(succeeded.status).toBe('succeeded');
    expect(succeeded.concurrency).toEqual({ key: '7', scope: 'flow', limit: 1 });

    const refused = await acme.call(
      'POST',
      '/api/v1/editable-flows',
      orderFlow('order-shipped', { key: '{{ $vars.ID }}' }),
    );
    const published =
      refused.status === 201 ? await acme.call('POST', `/api/v1/editable-flows/${refused.body.id}/publish`) : refused;
    expect(published.status).toBe(400);
    expect(published.body.errors).toEqual([
      { path: expect.stringMatching(/flowControl\.concurrency\.key$/), message: expect.stringContaining('$input') },
    ]);
  });

  it('collapses 20 edits of one order within a second into one run of the last, started a period after it', async () => {
    await acme.publish({
      ...forwardWebhook('order-edited', `${erp.url}/edits`),
      flowControl: { debounce: { key: '{{ $input.body.id }}', period: '2s' } },
    });
    const before = erp.requests.length;
    const edits: Array<{ runId: string; messageId: string; sentAt: number }> = [];
    for (let n = 0; n < 20; n++) {
      const sentAt = Date.now();
      edits.push({ ...(await deliver('order-edited', { id: 'order-7', n })), sentAt });
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    const other = await deliver('order-edited', { id: 'order-8', n: 0 });
    const last = edits.at(-1)!;
    expect((await acme.settledRun(last.runId)).status).toBe('succeeded');
    expect((await acme.settledRun(other.runId)).status).toBe('succeeded');
    // Each edit's run gave way to the next edit's.
    for (const [n, { runId }] of edits.slice(0, -1).entries()) {
      const run = await acme.settledRun(runId);
      expect(run).toMatchObject({ status: 'debounced', debouncedBy: edits[n + 1].runId, error: null, startedAt: null });
    }
    const sent = erp.requests.slice(before).map((request) => ({ ...JSON.parse(request.body), at: request.receivedAt }));
    expect(sent.map(({ id, n }) => [id, n]).sort()).toEqual([
      ['order-7', 19],
      ['order-8', 0],
    ]);
    // Started once its period had passed since the last edit arrived.
    expect(sent.find(({ id }) => id === 'order-7').at).toBeGreaterThanOrEqual(last.sentAt + 2000);
    const { body: message } = await acme.call('GET', `/api/v1/messages/${edits[0].messageId}`);
    expect(message.status).toBe('debounced');
    // The statistics count them as they ended.
    const flowId = (await acme.settledRun(last.runId)).flowId;
    const { body: stats } = await acme.call('GET', `/api/v1/statistics?flowId=${flowId}`);
    expect(stats.runs).toEqual([expect.objectContaining({ total: 21, counts: { succeeded: 2, debounced: 19 } })]);
  });

  it('shows operators the runs waiting for a debounce period, per tenant', async () => {
    await acme.publish({
      ...forwardWebhook('nightly-digest', `${erp.url}/digest`),
      flowControl: { debounce: { key: '{{ $input.body.day }}', period: '1h' } },
    });
    await deliver('nightly-digest', { day: '2026-11-28' });
    await deliver('nightly-digest', { day: '2026-11-28' });
    await deliver('nightly-digest', { day: '2026-11-29' });
    expect(await env.metrics()).toMatch(/^tributary_runs_waiting_for_key\{tenant="acme",kind="debounce"\} 2$/m);
  });

  it('runs a key whose messages never stop at its maxWait, then debounces the rest again', async () => {
    await acme.publish({
      ...forwardWebhook('stock-changed', `${erp.url}/stock`),
      flowControl: { debounce: { key: '{{ $input.body.sku }}', period: '1s', maxWait: '2s' } },
    });
    const changes = [];
    for (let n = 0; n < 12; n++) {
      changes.push(await deliver('stock-changed', { sku: 'sku-1', n }));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const runs = await Promise.all(changes.map(({ runId }) => acme.settledRun(runId)));
    const ran = runs.filter((run) => run.status === 'succeeded');
    // Messages 300 ms apart never leave a 1 s period quiet: only maxWait starts a run before the last one's.
    expect(ran.length).toBeGreaterThan(1);
    expect(runs.filter((run) => run.status === 'debounced')).toHaveLength(12 - ran.length);
    expect(ran.at(-1).id).toBe(changes.at(-1)!.runId);
    // A debounced run gave way to the next message's run: following them leads to a run that ran.
    const byId = new Map(runs.map((run) => [run.id, run]));
    for (let run of runs) {
      while (run.status === 'debounced') run = byId.get(run.debouncedBy);
      expect(run.status).toBe('succeeded');
    }
  });
});
