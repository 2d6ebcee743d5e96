import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErpSimulator, erpReplies } from './support/erp-simulator.ts';
import { ERP_CREDENTIALS } from './support/refund-fixture.ts';
import { Receiver } from './support/receiver.ts';
import { forwardWebhook } from './support/flow-documents.ts';
import {
  eventually,
  sendWebhook,
  spawnWorker,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';

// Outbound budgets: the runs of every flow of a tenant that send to one outside account share what it allows.
const ACCOUNT_CONCURRENCY = 4;
const SERVICE_MS = 40;

let env: TestPlatform;
let acme: ApiClient;
let erp: ErpSimulator;
let worker: ChildProcess | undefined;

/** A flow that POSTs its message to the ERP, signed for its account, drawing on the budget `erp-acme`. */
const erpFlow = (key: string) =>
  forwardWebhook(key, erp.apiUrl, {
    config: {
      budget: 'erp-acme',
      auth: {
        type: 'oauth1',
        consumerKey: ERP_CREDENTIALS.consumerKey,
        consumerSecret: ERP_CREDENTIALS.consumerSecret,
        token: ERP_CREDENTIALS.tokenId,
        tokenSecret: ERP_CREDENTIALS.tokenSecret,
        realm: ERP_CREDENTIALS.accountId.toUpperCase(),
      },
    },
    retry: { maxAttempts: 10, backoffMs: 200 },
  });

async function deliver(key: string, orders: string[]) {
  return Promise.all(
    orders.map(async (order) => {
      const answer = await sendWebhook(env.url, 'acme', key, { order });
      expect(answer.status).toBe(202);
      return answer.body as { messageId: string; runId: string };
    }),
  );
}

describe('outbound budgets, on PostgreSQL', () => {
  beforeAll(async () => {
    erp = await new ErpSimulator(ERP_CREDENTIALS).start();
    env = await startTestPlatform('postgres', { api: true, worker: false });
    acme = await env.tenant('acme');
    // The runs in a worker process of their own, as deployed at scale: the test's requests do not slow them down.
    const { child, ready } = spawnWorker(env.config);
    worker = child;
    await ready;
  });
  afterAll(async () => {
    if (worker) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGKILL');
      await exited;
    }
    await erp?.close();
    await env?.close();
  });

  it('two flows and a bulk replay share an ERP account of 4: each record once, few refusals', async () => {
    await acme.publish(erpFlow('refunds'));
    await acme.publish(erpFlow('invoices'));
    erp.limitConcurrency(ACCOUNT_CONCURRENCY, SERVICE_MS);
    // Twenty records the ERP refused for good (a closed period), to replay once it takes them.
    erp.script(...Array.from({ length: 20 }, () => ({ ...erpReplies.invalidField, delayMs: SERVICE_MS })));
    const failed = await deliver(
      'refunds',
      Array.from({ length: 20 }, (_, i) => `failed-${i}`),
    );
    for (const { runId } of failed) expect((await acme.settledRun(runId)).status).toBe('failed');

    // A backlog released at once (after an outage, a paused queue): the budget alone sets the pace, not how fast the
    // messages arrive.
    const operator = await env.operator();
    await operator.call('POST', '/api/v1/queues/runs/pause');
    const sentBefore = erp.requests.length;
    const refusedBefore = erp.refusedForLimit();
    const [refunds, invoices, replay] = await Promise.all([
      deliver(
        'refunds',
        Array.from({ length: 40 }, (_, i) => `refund-${i}`),
      ),
      deliver(
        'invoices',
        Array.from({ length: 40 }, (_, i) => `invoice-${i}`),
      ),
      acme.call('POST', '/api/v1/message-queue/replays', { filter: {}, ratePerSecond: 100 }),
    ]);
    expect(replay.status).toBe(202);
    await eventually(async () => {
      const { body } = await operator.call('GET', '/api/v1/queues/runs');
      if (body.backlog.runs < 100) throw new Error(`${body.backlog.runs} runs queued`);
    });
    await operator.call('POST', '/api/v1/queues/runs/resume');
    // One at a time: polling them all at once would take the CPU the runs need.
    const delivered = [];
    for (const { runId } of [...refunds, ...invoices]) delivered.push(await acme.settledRun(runId));
    await eventually(async () => {
      const { body } = await acme.call('GET', `/api/v1/message-queue/replays/${replay.body.id}`);
      if (body.status !== 'finished') throw new Error(`the replay is ${body.status}`);
    });
    const replayed = await Promise.all(
      failed.map(async ({ messageId }) => {
        const { body } = await acme.call('GET', `/api/v1/messages/${messageId}`);
        return acme.settledRun(body.runs.at(-1).id);
      }),
    );
    // A request the account refused for its load went again with its next turn: no node spent an attempt on it.
    for (const run of [...delivered, ...replayed]) {
      expect(run.status).toBe('succeeded');
      expect(run.steps.map((step: { attempts: number }) => step.attempts)).toEqual([1]);
    }

    // Every record reached the ERP exactly once.
    const received = erp.receipts().map((record) => (record as { order: string }).order);
    expect(received.sort()).toEqual(
      [
        ...Array.from({ length: 20 }, (_, i) => `failed-${i}`),
        ...Array.from({ length: 40 }, (_, i) => `refund-${i}`),
        ...Array.from({ length: 40 }, (_, i) => `invoice-${i}`),
      ].sort(),
    );
    const sent = erp.requests.length - sentBefore;
    const refused = erp.refusedForLimit() - refusedBefore;
    expect(refused).toBeLessThanOrEqual(sent / 10);
    // The ERP's own view: from the first request to the last answer, against what its limit allows.
    const phase = erp.requests.slice(sentBefore);
    const elapsed = Math.max(...phase.map((request) => request.answeredAt ?? 0)) - phase[0].receivedAt;
    const bound = (100 * SERVICE_MS) / ACCOUNT_CONCURRENCY;
    console.log(
      `budget: ${sent} requests, ${refused} refused; ${elapsed} ms for what the account's limit allows in ${bound} ms`,
    );

    // Operators see the budget: what it learned the account takes, nothing in flight now, nobody waiting.
    const metrics = await env.metrics();
    const learned = Number(
      /^tributary_outbound_budget_limit\{tenant="acme",budget="erp-acme"\} (\d+)$/m.exec(metrics)?.[1],
    );
    expect(learned).toBeGreaterThanOrEqual(2);
    expect(learned).toBeLessThanOrEqual(2 * ACCOUNT_CONCURRENCY);
    expect(metrics).toMatch(/^tributary_outbound_budget_in_flight\{tenant="acme",budget="erp-acme"\} 0$/m);
    expect(metrics).toMatch(/^tributary_outbound_budget_waiting_runs\{tenant="acme",budget="erp-acme"\} 0$/m);
  });
});

describe('outbound budgets of origins, on PostgreSQL', () => {
  let sink: Receiver;
  const sendingFlow = (key: string) =>
    forwardWebhook(key, `${sink.url}/${key}`, { retry: { maxAttempts: 5, backoffMs: 100 } });

  beforeAll(async () => {
    sink = await new Receiver().start();
    env = await startTestPlatform('postgres', undefined, { outboundStartConcurrency: 2 });
    acme = await env.tenant('acme');
  });
  afterAll(async () => {
    await sink?.close();
    await env?.close();
  });

  it('lets an origin never seen have OUTBOUND_START_CONCURRENCY requests in flight; the others wait, and say so', async () => {
    await acme.publish(sendingFlow('start'));
    sink.script('hang', 'hang');
    const runs = await deliver('start', ['a', 'b', 'c', 'd', 'e', 'f']);
    // Past the wait in place, the runs without a turn wait holding no slot, and say for what.
    const waiting = await eventually(async () => {
      const found = [];
      for (const { runId } of runs) {
        const { body } = await acme.call('GET', `/api/v1/runs/${runId}`);
        if (body.status === 'waiting') found.push(body);
      }
      if (found.length < 4) throw new Error(`${found.length} runs wait`);
      return found;
    });
    for (const run of waiting)
      expect(run.error.message).toMatch(
        /^waits for its turn on outbound budget http:\/\/127\.0\.0\.1:\d+: 2 in flight of 2/,
      );
    expect(sink.requests).toHaveLength(2);
    // The two hung requests fail (a transport error, retried): every run then gets its turn.
    sink.release();
    for (const { runId } of runs) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    // The runs that waited for their turn say how long, over all their passes.
    for (const { id } of waiting) expect((await acme.settledRun(id)).budgetWaitMs).toBeGreaterThan(0);
    const delivered = new Set(sink.requests.filter((request) => request.reply?.status === 200).map((r) => r.body));
    expect(delivered.size).toBe(6);
  });

  it("sends nothing to an origin before its Retry-After has passed, whichever flow's request it answered", async () => {
    await acme.publish(sendingFlow('first'));
    await acme.publish(sendingFlow('others'));
    const before = sink.requests.length;
    sink.script({ status: 429, body: { error: 'slow down' }, headers: { 'retry-after': '2' } });
    const [first] = await deliver('first', ['x']);
    const refused = await eventually(async () => {
      const answered = sink.requests
        .slice(before)
        .find((request) => request.reply?.status === 429 && request.answeredAt);
      if (!answered) throw new Error('not refused yet');
      return answered;
    });
    const others = await deliver('others', ['y', 'z']);
    for (const { runId } of [first, ...others]) expect((await acme.settledRun(runId)).status).toBe('succeeded');
    const after = sink.requests.slice(before).filter((request) => request !== refused);
    expect(after).toHaveLength(3);
    // The clocks of the sender and the receiver are one: the Retry-After is a lower bound on the next request.
    for (const request of after) expect(request.receivedAt).toBeGreaterThanOrEqual(refused.answeredAt! + 2000 - 5);
  });
});
