import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';
import { eachLine, forwardWebhook } from './support/flow-documents.ts';
import { newId } from '../engine/model/ids.ts';

// Bulk replays, API and worker in one process, on each store: the replay's page is one statement.
let env: TestPlatform;
let acme: ApiClient;
let failing = true;
/** The outside system: it refuses (422, a permanent failure) while `failing`. */
let sink: Receiver;

const sendingFlow = (key: string) => forwardWebhook(key, `{{ $vars.SINK_URL }}/${key}`, { retry: { maxAttempts: 1 } });

const REPLAYS = '/api/v1/message-queue/replays';

async function deliver(key: string, n: number): Promise<Array<{ messageId: string; runId: string }>> {
  const accepted = [];
  for (let i = 0; i < n; i++) {
    const answer = await sendWebhook(env.url, 'acme', key, { order: `${key}-${i}` });
    expect(answer.status).toBe(202);
    accepted.push(answer.body);
  }
  for (const { runId } of accepted) await acme.settledRun(runId);
  return accepted;
}

/** A platform on `store`, its tenant acme, and the sink, refusing while `failing` (set at first). */
async function startWithSink(store: 'pglite' | 'postgres') {
  failing = true;
  env = await startTestPlatform(store);
  acme = await env.tenant('acme');
  sink = new Receiver(() => (failing ? { status: 422, body: { error: 'closed for the night' } } : undefined));
  await sink.start();
  await acme.call('PUT', '/api/v1/global-variables/SINK_URL', { value: sink.url });
}

async function stopWithSink() {
  await sink?.close();
  await env?.close();
}

describe.each(['pglite', 'postgres'] as const)('bulk replay on %s', (store) => {
  beforeAll(() => startWithSink(store));
  afterAll(stopWithSink);

  it('counts first, replays what failed once each at its rate, links each replay, and replays nothing twice', async () => {
    const ordersFlow = await acme.publish(sendingFlow('orders'));
    await acme.publish(sendingFlow('invoices'));
    failing = false;
    const [fine] = await deliver('orders', 1);
    failing = true;
    const before = new Date().toISOString();
    const failed = await deliver('orders', 5);
    const otherFlow = await deliver('invoices', 2);
    for (const { runId } of failed) expect((await acme.settledRun(runId)).error.kind).toBe('permanent');
    failing = false;

    const count = async (filter: object) =>
      (await acme.call('POST', REPLAYS, { filter, dryRun: true })).body as { dryRun: true; count: number };
    expect(await count({ flowId: ordersFlow })).toEqual({ dryRun: true, count: 5, exact: true });
    expect((await count({})).count).toBe(7);
    expect((await count({ receivedFrom: '1900-01-01T00:00:00Z' })).count).toBe(7);
    expect((await count({ flowId: ordersFlow, errorKind: 'retryable' })).count).toBe(0);
    expect((await count({ flowId: ordersFlow, receivedTo: before })).count).toBe(0);
    expect((await count({ flowId: ordersFlow, status: 'handled' })).count).toBe(0);

    const asked = { filter: { flowId: ordersFlow, errorKind: 'permanent', receivedFrom: before }, ratePerSecond: 2 };
    const made = await acme.call('POST', REPLAYS, asked, { 'idempotency-key': 'night-of-31st' });
    expect(made.status).toBe(202);
    expect(made.body).toMatchObject({ status: 'running', total: 5, replayed: 0, ratePerSecond: 2, priority: 5 });
    // The same request again (a retry of a lost answer) answers the same replay.
    const again = await acme.call('POST', REPLAYS, asked, { 'idempotency-key': 'night-of-31st' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(made.body.id);

    const done = await eventually(async () => {
      const replay = (await acme.call('GET', `${REPLAYS}/${made.body.id}`)).body;
      if (replay.status !== 'finished') throw new Error(`replay is ${replay.status}`);
      return replay;
    });
    expect(done).toMatchObject({ total: 5, replayed: 5, skipped: 0, finishedAt: expect.any(String) });
    // Each failed message ran once more, on a run naming the one it replays; the others did not run again.
    for (const { messageId, runId } of failed) {
      const { runs } = (await acme.call('GET', `/api/v1/messages/${messageId}`)).body;
      expect(runs).toHaveLength(2);
      expect(runs[1]).toMatchObject({ replayOf: runId });
      expect((await acme.settledRun(runs[1].id)).status).toBe('succeeded');
    }
    for (const { messageId } of [fine, ...otherFlow])
      expect((await acme.call('GET', `/api/v1/messages/${messageId}`)).body.runs).toHaveLength(1);
    const sent = sink.requests.filter((request) => request.url === '/orders' && !request.refused);
    expect(sent.map((request) => JSON.parse(request.body).order).sort()).toEqual(
      ['orders-0', 'orders-0', 'orders-1', 'orders-2', 'orders-3', 'orders-4'].sort(),
    );

    // Asked again without the key: nothing matches any more, nothing is sent twice.
    const repeat = await acme.call('POST', REPLAYS, asked);
    expect(repeat.body).toMatchObject({ total: 0 });
    const listed = (await acme.call('GET', REPLAYS)).body.nodes.map((replay: { id: string }) => replay.id);
    expect(listed).toEqual([repeat.body.id, made.body.id]);
    // Replays are the tenant's own, and a filter names the tenant's own flows only.
    const other = await env.tenant('globex');
    expect((await other.call('GET', `${REPLAYS}/${made.body.id}`)).status).toBe(404);
    const crossing = await other.call('POST', REPLAYS, { filter: { flowId: ordersFlow }, dryRun: true });
    expect(crossing.status).toBe(404);
    expect(crossing.body.errors).toEqual([{ path: '$.body.filter.flowId', message: 'is not a flow of this tenant' }]);
  });

  it('goes on from where the run failed, under the same idempotency keys: a receiver can drop every repeat', async () => {
    // An ERP that refuses line B until it is fixed.
    let refuseB = true;
    const erp = new Receiver((request) =>
      refuseB && request.url === '/lines' && JSON.parse(request.body).sku === 'B' ? { status: 422 } : undefined,
    );
    await erp.start();
    try {
      await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
      const flowId = await acme.publish(
        eachLine('lines', { concurrency: 1 }, [
          { id: 'confirm', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.ERP_URL }}/confirm' } },
        ]),
      );
      const lines = ['A', 'B', 'C', 'D'].map((sku) => ({ sku }));
      const { messageId, runId } = (await sendWebhook(env.url, 'acme', 'lines', { lines })).body;
      expect((await acme.settledRun(runId)).status).toBe('failed');
      const sent = () => erp.requests.map((request) => [request.url, request.body, request.headers['idempotency-key']]);
      const keyOf = (sku: string) => sent().find(([, body]) => body === JSON.stringify({ sku }))?.[2];
      expect(sent().map(([url, body]) => `${url} ${body}`)).toEqual(['/lines {"sku":"A"}', '/lines {"sku":"B"}']);
      const [keyA, keyB] = [keyOf('A'), keyOf('B')];

      refuseB = false;
      const replay = await acme.call('POST', REPLAYS, { filter: { flowId } });
      expect(replay.status).toBe(202);
      const replayed = await eventually(async () => {
        const { runs } = (await acme.call('GET', `/api/v1/messages/${messageId}`)).body;
        if (runs.length < 2) throw new Error('not replayed yet');
        return acme.settledRun(runs[1].id);
      });
      expect(replayed).toMatchObject({ status: 'succeeded', replayOf: runId });
      // A is not sent again; B is sent again under the key it had; C, D and the confirmation follow.
      expect(sent().map(([url, body]) => `${url} ${body}`)).toEqual([
        '/lines {"sku":"A"}',
        '/lines {"sku":"B"}',
        '/lines {"sku":"B"}',
        '/lines {"sku":"C"}',
        '/lines {"sku":"D"}',
        '/confirm ',
      ]);
      expect(sent()[2][2]).toBe(keyB);
      expect(keyA).toMatch(new RegExp(`^${messageId}\\.each\\[0\\]\\.send`));

      // Asked to redo every step: all of it is sent again, each under the key it had.
      const redone = await acme.call('POST', `/api/v1/messages/${messageId}/replay`, { redoCompletedSteps: true });
      expect(redone.status).toBe(202);
      expect((await acme.settledRun(redone.body.id)).status).toBe('succeeded');
      expect(sent()).toHaveLength(11);
      const keys = new Map<string, Set<unknown>>();
      for (const [url, body, key] of sent())
        keys.set(`${url} ${body}`, (keys.get(`${url} ${body}`) ?? new Set()).add(key));
      expect([...keys.values()].map((set) => set.size)).toEqual([1, 1, 1, 1, 1]);
    } finally {
      await erp.close();
    }
  });

  it('runs the failed items of a loop that went on past them again, and only those', async () => {
    let refuseB = true;
    const erp = new Receiver((request) =>
      refuseB && JSON.parse(request.body).sku === 'B' ? { status: 422 } : undefined,
    );
    await erp.start();
    try {
      await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
      await acme.publish(eachLine('each-line', { concurrency: 1, onItemFailure: 'continue' }));
      const lines = ['A', 'B', 'C'].map((sku) => ({ sku }));
      const { messageId, runId } = (await sendWebhook(env.url, 'acme', 'each-line', { lines })).body;
      expect((await acme.settledRun(runId)).status).toBe('handled');
      refuseB = false;
      const replay = await acme.call('POST', `/api/v1/messages/${messageId}/replay`);
      expect((await acme.settledRun(replay.body.id)).status).toBe('succeeded');
      const sent = erp.requests.map((request) => [request.body, request.headers['idempotency-key']]);
      expect(sent.map(([body]) => body)).toEqual(['{"sku":"A"}', '{"sku":"B"}', '{"sku":"C"}', '{"sku":"B"}']);
      expect(sent[3][1]).toBe(sent[1][1]);
    } finally {
      await erp.close();
    }
  });

  it('stops when cancelled: the runs started go on, no more start', async () => {
    const { body: replay } = await acme.call('POST', REPLAYS, { filter: { status: 'failed' }, ratePerSecond: 1 });
    expect(replay).toMatchObject({ status: 'running', total: 2 });
    const cancelled = await acme.call('POST', `${REPLAYS}/${replay.id}/cancel`);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', finishedAt: expect.any(String) });
    const later = (await acme.call('GET', `${REPLAYS}/${replay.id}`)).body;
    expect(later.status).toBe('cancelled');
    expect(later.replayed).toBeLessThanOrEqual(1);
    expect((await acme.call('POST', `${REPLAYS}/01a00000-0000-7000-8000-000000000000/cancel`)).status).toBe(404);
  });

  it('refuses a filter it does not know and a rate past the limit, naming the field', async () => {
    const refused = await acme.call('POST', REPLAYS, { filter: { flow: 'orders' }, ratePerSecond: 1000 });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(
      ['$.body.filter.flow', '$.body.ratePerSecond'].sort(),
    );
  });
});

describe('bulk replays of one tenant', () => {
  it('are at most 5 running at once: the sixth is refused until one ends', async () => {
    // An API without workers: nothing moves the replays on, so they stay running.
    const api = await startTestPlatform('postgres', { api: true, worker: false });
    try {
      const tenant = await api.tenant('busy');
      for (let i = 0; i < 5; i++) expect((await tenant.call('POST', REPLAYS, {})).status).toBe(202);
      const sixth = await tenant.call('POST', REPLAYS, {});
      expect(sixth.status).toBe(409);
      expect(sixth.body.detail).toContain('5 replays of the tenant are running');
      // Another tenant is not held back by this one's.
      expect((await (await api.tenant('calm')).call('POST', REPLAYS, {})).status).toBe(202);
      const [first] = (await tenant.call('GET', REPLAYS)).body.nodes;
      await tenant.call('POST', `${REPLAYS}/${first.id}/cancel`);
      expect((await tenant.call('POST', REPLAYS, {})).status).toBe(202);
    } finally {
      await api.close();
    }
  });
});

describe('replays at once, on PostgreSQL', () => {
  beforeAll(() => startWithSink('postgres'));
  afterAll(stopWithSink);

  it('replay each message once, and each counts what it replayed and skipped up to its total', async () => {
    await acme.publish(sendingFlow('orders'));
    const failed = await deliver('orders', 40);
    failing = false;
    // Five replays of the same messages, their pages taken at once by the workers and by five more takers.
    const made = await Promise.all(
      Array.from({ length: 5 }, () => acme.call('POST', REPLAYS, { filter: {}, ratePerSecond: 7 })),
    );
    expect(made.map((answer) => answer.status)).toEqual(Array(5).fill(202));
    // Each counts the messages whose latest run failed as it is made: one made after another's first page was
    // taken (the workers take it at once) counts fewer.
    expect(Math.max(...made.map((answer) => answer.body.total))).toBe(40);
    const take = async (): Promise<void> => {
      const page = await env.platform.store.replayNextPage(Array.from({ length: 100 }, newId));
      if (page) return take();
    };
    await Promise.all(Array.from({ length: 5 }, take));
    const done = await eventually(async () => {
      const all = await Promise.all(made.map(({ body }) => acme.call('GET', `${REPLAYS}/${body.id}`)));
      if (all.some(({ body }) => body.status !== 'finished')) throw new Error('a replay is running');
      return all.map(({ body }) => body);
    });
    for (const replay of done) expect(replay.replayed + replay.skipped).toBe(replay.total);
    expect(done.reduce((sum, replay) => sum + replay.replayed, 0)).toBe(40);
    for (const { messageId } of failed)
      expect((await acme.call('GET', `/api/v1/messages/${messageId}`)).body.runs).toHaveLength(2);
  });

  it('start one run for one message replayed five times at once', async () => {
    failing = true;
    const [{ messageId }] = await deliver('orders', 1);
    // The replayed run hangs on its request: a replay answered after it had finished would rightly start another.
    failing = false;
    sink.script('hang');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => acme.call('POST', `/api/v1/messages/${messageId}/replay`)),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409, 409, 409, 409]);
    sink.release();
  });

  it("leave a flow's calls to their callers unless asked", async () => {
    failing = true;
    await acme.publish({
      key: 'caller',
      name: 'caller',
      trigger: { type: 'webhook', config: {} },
      nodes: [{ id: 'call', operation: 'call', config: { flow: 'orders', input: '{{ $input.body }}' } }],
      edges: [{ from: 'trigger', to: 'call' }],
    });
    const callerFlow = (await acme.call('GET', '/api/v1/flows')).body.nodes.find(
      (flow: { key: string }) => flow.key === 'caller',
    ).id;
    const [{ runId }] = await deliver('caller', 1);
    const caller = await acme.settledRun(runId);
    expect(caller.status).toBe('failed');
    const count = async (filter: object) =>
      (await acme.call('POST', REPLAYS, { filter, dryRun: true })).body.count as number;
    // The called run failed too: a replay of everything takes the caller only, which calls again.
    const everything = await count({});
    expect(await count({ includeCalls: true })).toBe(everything + 1);
    expect(await count({ flowId: callerFlow })).toBe(1);
    failing = false;
  });
});
