import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LOOP_ITEMS } from '../engine/nodes/loop.ts';
import { eventually, sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

// The flow language's nodes, in the embedded mode (PGlite store, API and worker in one process).
let env: TestPlatform;
let acme: ApiClient;
let sink: Receiver;

const example = (file: string) =>
  JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../flows', file), 'utf8')) as Record<string, any>;

beforeAll(async () => {
  // Replies are waited for 1.5 s here, so that a late reply is seen to fall back to 202.
  env = await startTestPlatform('pglite', undefined, { replyWaitMs: 1500 });
  acme = await env.tenant('acme');
  sink = await new Receiver().start();
  // As a user would: the flow reads its sink from a global variable set over the API.
  await acme.call('PUT', '/api/v1/global-variables/SINK_URL', { value: sink.url });
});
afterAll(async () => {
  await sink?.close();
  await env?.close();
});

const received = (url: string) => sink.requests.filter((request) => request.url === url);
const skus = (...names: string[]) => names.map((sku) => ({ sku }));
const bodies = (url: string) => received(url).map((request) => JSON.parse(request.body));

/** The each-item example with its loop's config changed, published under another key. */
function eachItem(key: string, config: object, send: object = {}) {
  const document = example('each-item.json');
  const loop = document.nodes[0];
  loop.config = { ...loop.config, ...config };
  loop.nodes[0] = { ...loop.nodes[0], ...send };
  return { ...document, key };
}

describe('a loop over items', () => {
  it('flows/each-item.json POSTs every item once, two at a time, and outputs the answers in order', async () => {
    await acme.publish(example('each-item.json'));
    sink.slow('/items', 30);
    const items = [1, 2, 3, 4, 5, 6, 7].map((n) => ({ sku: `sku-${n}`, quantity: n }));
    const accepted = await sendWebhook(env.url, 'acme', 'each-item', { items });
    expect(accepted.status).toBe(202);
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');

    expect(bodies('/items').sort((a, b) => a.quantity - b.quantity)).toEqual(items);
    expect(sink.maxConcurrent('/items')).toBeLessThanOrEqual(2);
    // Each item's side effect has its own idempotency key, and its own checkpoint.
    expect(
      received('/items')
        .map((request) => request.headers['idempotency-key'])
        .sort(),
    ).toEqual(items.map((_, index) => `${run.messageId}.each[${index}].send`).sort());
    const loop = run.steps.find((step: { key: string }) => step.key === 'each');
    expect(loop.output.failed).toEqual([]);
    expect(loop.output.results.map((result: any) => result.body.received)).toEqual(items);
    // The run's result is its last node's output: the loop's, listing every item's.
    expect(run.result).toEqual(loop.output);
    expect(run.steps.filter((step: { nodeId: string }) => step.nodeId === 'send')).toHaveLength(items.length);
  });

  it('continue: the items that fail are listed and the others still go; stop: the first failure fails the node', async () => {
    sink.slow('/items', 0);
    await acme.publish(eachItem('each-continue', { concurrency: 1 }));
    sink.script({ status: 200 }, { status: 422, body: { error: 'bad sku' } });
    const going = await sendWebhook(env.url, 'acme', 'each-continue', { items: skus('a', 'b', 'c') });
    const run = await acme.settledRun(going.body.runId);
    // The run went on past a failed item: handled, not succeeded, and its message says the same.
    expect(run.status).toBe('handled');
    expect(run.error).toMatchObject({ kind: 'permanent', node: 'send', failures: 1 });
    expect((await acme.call('GET', `/api/v1/messages/${run.messageId}`)).body.status).toBe('handled');
    const loop = run.steps.find((step: { key: string }) => step.key === 'each');
    // A scripted answer has no body: the results are told apart by status.
    expect(loop.output.results.map((result: any) => result?.status ?? null)).toEqual([200, null, 200]);
    expect(loop.output.failed).toEqual([
      { index: 1, error: expect.objectContaining({ kind: 'permanent', node: 'send' }), handled: false },
    ]);

    await acme.publish(eachItem('each-stop', { concurrency: 1, onItemFailure: 'stop' }));
    sink.script({ status: 200 }, { status: 422, body: { error: 'bad sku' } });
    const before = received('/items').length;
    const stopping = await sendWebhook(env.url, 'acme', 'each-stop', { items: skus('d', 'e', 'f') });
    const stopped = await acme.settledRun(stopping.body.runId);
    expect(stopped.status).toBe('failed');
    expect(stopped.error).toMatchObject({ kind: 'permanent', node: 'each' });
    expect(stopped.error.message).toMatch(/^item 1 failed at node send: /);
    // The item after the failed one never started.
    expect(
      received('/items')
        .slice(before)
        .map((request) => JSON.parse(request.body)),
    ).toEqual(skus('d', 'e'));
  });

  it('an item whose call fails for now is retried alone, without holding up the next: no item is sent again', async () => {
    await acme.publish(eachItem('each-retry', { concurrency: 1 }));
    sink.script({ status: 200 }, { status: 503 }, { status: 200 }, { status: 200 });
    const before = received('/items').length;
    const accepted = await sendWebhook(env.url, 'acme', 'each-retry', { items: skus('g', 'h', 'i') });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    const sent = received('/items').slice(before);
    expect(sent.map((request) => JSON.parse(request.body))).toEqual(skus('g', 'h', 'i', 'h'));
    expect(sent.map((request) => request.headers['idempotency-key'])).toEqual([
      `${run.messageId}.each[0].send`,
      `${run.messageId}.each[1].send`,
      `${run.messageId}.each[2].send`,
      `${run.messageId}.each[1].send`,
    ]);
    expect(run.steps.find((step: { key: string }) => step.key === 'each[1].send')).toMatchObject({
      status: 'succeeded',
      attempts: 2,
    });
  });

  it('keys items by an expression, and refuses a list whose keys repeat', async () => {
    await acme.publish(eachItem('each-keyed', { key: '{{ $item.sku }}', concurrency: 1 }));
    const accepted = await sendWebhook(env.url, 'acme', 'each-keyed', { items: [{ sku: 'A-1' }, { sku: 'B-2' }] });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((step: { key: string }) => step.key)).toEqual(['each[A-1].send', 'each[B-2].send', 'each']);
    expect(
      received('/items')
        .slice(-2)
        .map((request) => request.headers['idempotency-key']),
    ).toEqual([`${run.messageId}.each[A-1].send`, `${run.messageId}.each[B-2].send`]);

    const repeated = await sendWebhook(env.url, 'acme', 'each-keyed', { items: [{ sku: 'A' }, { sku: 'A' }] });
    const refused = await acme.settledRun(repeated.body.runId);
    expect(refused).toMatchObject({ status: 'failed', error: { kind: 'permanent', node: 'each' } });
    expect(refused.error.message).toBe("key of item 1 repeats an earlier item's: A");
  });

  it(`fails a loop over more than ${MAX_LOOP_ITEMS} items, or over something that is not a list, at once`, async () => {
    await acme.publish(eachItem('each-limits', {}));
    const before = received('/items').length;
    const tooMany = await sendWebhook(env.url, 'acme', 'each-limits', { items: new Array(MAX_LOOP_ITEMS + 1).fill(0) });
    const notList = await sendWebhook(env.url, 'acme', 'each-limits', { items: { a: 1 } });
    const many = await acme.settledRun(tooMany.body.runId);
    const object = await acme.settledRun(notList.body.runId);
    expect(many).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'permanent', node: 'each' } });
    expect(many.error.message).toBe(
      `items has ${MAX_LOOP_ITEMS + 1} items, over the limit of ${MAX_LOOP_ITEMS} per loop`,
    );
    expect(object.error.message).toBe('items must be a list: {{ $input.body.items }} gave an object');
    expect(received('/items').length).toBe(before);
  });
});

describe('a wait', () => {
  const waitThenSend = (key: string, config: object) => ({
    key,
    name: key,
    trigger: { type: 'webhook' },
    nodes: [
      { id: 'pause', operation: 'wait', config },
      {
        id: 'send',
        operation: 'http.request',
        config: { method: 'POST', url: '{{ $vars.SINK_URL }}/after-wait', body: '{{ $steps.pause }}' },
      },
    ],
    edges: [
      { from: 'trigger', to: 'pause' },
      { from: 'pause', to: 'send' },
    ],
  });

  it('pauses the run, waiting and holding no worker, then goes on once the time has come', async () => {
    await acme.publish(waitThenSend('wait-for', { for: '{{ $input.body.pause }}' }));
    const accepted = await sendWebhook(env.url, 'acme', 'wait-for', { pause: '2s' });
    const waiting = await eventually(async () => {
      const run = (await acme.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body;
      if (run.status !== 'waiting') throw new Error(`run is ${run.status}`);
      return run;
    });
    expect(waiting.error).toMatchObject({ kind: 'later', node: 'pause' });
    expect(waiting.error.message).toMatch(/^waits until \d{4}-/);
    // One read that waits for the end, instead of polling.
    const run = (await acme.call('GET', `/api/v1/runs/${accepted.body.runId}?wait=20`)).body;
    expect(run.status).toBe('succeeded');
    const { until } = run.steps.find((step: { key: string }) => step.key === 'pause').output;
    const [sent] = received('/after-wait');
    expect(JSON.parse(sent.body)).toEqual({ until });
    // Nothing after the wait happened before the time it names.
    expect(sent.receivedAt).toBeGreaterThanOrEqual(Date.parse(until));
  });

  it('does not wait for a time already passed, and fails at once on a value that is not a time', async () => {
    await acme.publish(waitThenSend('wait-until', { until: '{{ $input.body.at }}' }));
    const passed = await sendWebhook(env.url, 'acme', 'wait-until', { at: '2020-01-01T00:00:00Z' });
    expect(await acme.settledRun(passed.body.runId)).toMatchObject({ status: 'succeeded', attempts: 1 });
    const bad = await sendWebhook(env.url, 'acme', 'wait-until', { at: 'tomorrow' });
    const failed = await acme.settledRun(bad.body.runId);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'permanent', node: 'pause' } });
    expect(failed.error.message).toBe(
      'until must be an ISO 8601 time with its offset, such as "2026-12-01T09:00:00Z": it is "tomorrow"',
    );
  });
});

describe('mistakes caught before a run', () => {
  const fulfil = {
    key: 'fulfil',
    name: 'fulfil',
    trigger: { type: 'webhook' },
    nodes: [
      {
        id: 'send',
        operation: 'http.request',
        config: { method: 'POST', url: '{{ $vars.FULFILL_URL }}/orders', body: '{{ $input.body }}' },
      },
    ],
    edges: [{ from: 'trigger', to: 'send' }],
  };

  it('warns of a variable that is not set, suggesting the one meant; a run fails naming it, not the pattern', async () => {
    await acme.call('PUT', '/api/v1/global-variables/FULFIL_URL', { value: sink.url });
    const created = await acme.call('POST', '/api/v1/editable-flows', fulfil);
    expect(created.status).toBe(201);
    const warning = {
      path: '$.draft.nodes[0].config.url',
      message: 'reads $vars.FULFILL_URL, which is not set: did you mean $vars.FULFIL_URL?',
      node: 'send',
    };
    const validated = await acme.call('POST', `/api/v1/editable-flows/${created.body.id}/validate`, {});
    expect(validated.body).toEqual({ valid: true, errors: [], warnings: [warning] });
    const published = await acme.call('POST', `/api/v1/editable-flows/${created.body.id}/publish`, {});
    expect(published.status).toBe(201);
    expect(published.body.warnings).toEqual([warning]);

    const accepted = await sendWebhook(env.url, 'acme', 'fulfil', { id: 1 });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'permanent', node: 'send' } });
    expect(run.error.message).toBe(
      '$vars.FULFILL_URL is not set: $.nodes.send.config.url must match pattern "^https?://" ' +
        '({{ $vars.FULFILL_URL }}/orders gave "/orders")',
    );
  });

  it('refuses a $steps of a node that does not exist, and a function JSONata does not have, at validate', async () => {
    const create = (expression: string) =>
      acme.call('POST', '/api/v1/editable-flows', {
        ...fulfil,
        key: 'typos',
        nodes: [
          { id: 'map', operation: 'transform', config: { expression } },
          { id: 'note', operation: 'log', config: { message: '{{ $steps.aa.id }}' } },
        ],
        edges: [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'note' },
        ],
      });
    const created = await create('{{ $uppercse($input.body.name) }}');
    expect(created.status).toBe(400);
    expect(created.body.errors).toEqual([
      {
        path: '$.body.nodes[0].config.expression',
        message: 'calls $uppercse, which JSONata does not have: did you mean $uppercase?',
        node: 'map',
      },
    ]);
    const fixed = await create('{{ $uppercase($input.body.name) }}');
    expect(fixed.status).toBe(400);
    expect(fixed.body.errors).toEqual([
      { path: '$.body.nodes[1].config.message', message: 'reads $steps.aa, but the flow has no node aa', node: 'note' },
    ]);
  });
});

describe('an error path', () => {
  it('flows/on-error.json: a refused order takes the error path with the error, and the run ends handled', async () => {
    await acme.publish(example('on-error.json'));
    sink.script({ status: 422, body: { error: 'unknown customer' } });
    const refused = await sendWebhook(env.url, 'acme', 'on-error', { id: 'A-1' });
    const run = await acme.settledRun(refused.body.runId);
    expect(run.status).toBe('handled');
    expect(run.error).toMatchObject({ kind: 'permanent', node: 'send' });
    expect((await acme.call('GET', `/api/v1/messages/${run.messageId}`)).body.status).toBe('handled');
    expect(run.steps.map((step: { key: string; status: string }) => [step.key, step.status])).toEqual([
      ['send', 'failed'],
      ['report', 'succeeded'],
    ]);
    const [report] = bodies('/errors');
    expect(report).toEqual({
      nodeId: 'send',
      order: 'A-1',
      error: { kind: 'permanent', message: run.error.message, nodeId: 'send', attempts: 1 },
    });

    // An order that goes through never takes the error path.
    const accepted = await sendWebhook(env.url, 'acme', 'on-error', { id: 'A-2' });
    expect((await acme.settledRun(accepted.body.runId)).status).toBe('succeeded');
    expect(bodies('/errors')).toHaveLength(1);
  });

  it('is taken after the last retry, and a retry of the error path does not run the failed node again', async () => {
    // Three tries of /orders fail for now; then the error path's first call fails for now too.
    sink.script({ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 });
    const accepted = await sendWebhook(env.url, 'acme', 'on-error', { id: 'B-1' });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('handled');
    expect(run.steps.find((step: { key: string }) => step.key === 'send')).toMatchObject({
      status: 'failed',
      attempts: 3,
    });
    expect(run.steps.find((step: { key: string }) => step.key === 'report')).toMatchObject({
      status: 'succeeded',
      attempts: 2,
    });
    const orders = received('/orders').filter((request) => JSON.parse(request.body).id === 'B-1');
    expect(orders).toHaveLength(3);
    const [, report] = bodies('/errors');
    expect(report.error).toMatchObject({ kind: 'retryable', attempts: 3, nodeId: 'send' });
    expect(report.error.message).toMatch(/^gave up after 3 attempts: /);
  });

  it("is taken only when its condition holds: a failure no path takes fails the run; $error is JSONata's", async () => {
    const document = example('on-error.json');
    document.key = 'on-error-when';
    document.nodes[0].retry = { maxAttempts: 1 };
    document.edges[1].when = '{{ $input.body.handle = true and $failure.nodeId = "send" }}';
    // On the error path, JSONata's $error still fails the expression that calls it, with the author's message.
    document.nodes.push({
      id: 'refuse',
      operation: 'transform',
      config: { expression: '{{ $failure.message ~> $contains("422") ? $error("Too Expensive") : "kept" }}' },
    });
    document.edges.push({ from: 'report', to: 'refuse' });
    await acme.publish(document);

    sink.script({ status: 422 }, { status: 200 });
    const handled = await acme.settledRun(
      (await sendWebhook(env.url, 'acme', 'on-error-when', { id: 'W-1', handle: true })).body.runId,
    );
    // The path was taken, and its last node failed on purpose: the run fails with the author's words.
    expect(handled.status).toBe('failed');
    expect(handled.error).toMatchObject({ node: 'refuse', message: expect.stringContaining('Too Expensive') });

    sink.script({ status: 500 });
    const reports = bodies('/errors').length;
    const unhandled = await acme.settledRun(
      (await sendWebhook(env.url, 'acme', 'on-error-when', { id: 'W-2', handle: false })).body.runId,
    );
    expect(unhandled.status).toBe('failed');
    expect(unhandled.error).toMatchObject({ node: 'send', kind: 'retryable' });
    expect((await acme.call('GET', `/api/v1/messages/${unhandled.messageId}`)).body.status).toBe('failed');
    expect(bodies('/errors')).toHaveLength(reports);
  });

  it('inside a loop: an item whose error path ran is listed, and the run ends handled, counting the items', async () => {
    const document: Record<string, any> = eachItem(
      'each-handled',
      { concurrency: 1, onItemFailure: 'stop' },
      { retry: { maxAttempts: 1 } },
    );
    const loop = document.nodes[0];
    loop.nodes.push({
      id: 'note',
      operation: 'transform',
      config: { expression: '{{ {"skipped": $item.sku, "because": $failure.message} }}' },
    });
    loop.edges = [
      { from: 'item', to: 'send' },
      { from: 'send', to: 'note', on: 'error' },
    ];
    await acme.publish(document);
    sink.script({ status: 200 }, { status: 500 }, { status: 200 }, { status: 404 });
    const accepted = await sendWebhook(env.url, 'acme', 'each-handled', { items: skus('p', 'q', 'r', 's') });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('handled');
    expect(run.error).toMatchObject({ node: 'send', failures: 2 });
    const output = run.steps.find((step: { key: string }) => step.key === 'each').output;
    // Handled items do not stop the loop: every item ran, and the error path's output is the item's result.
    expect(output.failed).toEqual([
      { index: 1, error: expect.objectContaining({ node: 'send' }), handled: true },
      { index: 3, error: expect.objectContaining({ node: 'send' }), handled: true },
    ]);
    expect(output.results[1]).toEqual({ skipped: 'q', because: expect.stringContaining('500') });
    expect(output.results[2]).toMatchObject({ status: 200 });
  });
});

describe('an honest dry run', () => {
  it('performs the calls that change nothing, simulates the others, and names the nodes that ran on placeholders', async () => {
    const created = await acme.call('POST', '/api/v1/editable-flows', {
      key: 'dry',
      name: 'dry',
      trigger: { type: 'webhook' },
      nodes: [
        { id: 'lookup', operation: 'http.request', config: { method: 'GET', url: '{{ $vars.SINK_URL }}/customers' } },
        { id: 'name', operation: 'transform', config: { expression: "{{ $steps.lookup.status & ' ok' }}" } },
        {
          id: 'post',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.SINK_URL }}/dry-orders', body: { name: '{{ $steps.name }}' } },
        },
        { id: 'after', operation: 'transform', config: { expression: '{{ $exists($steps.post.status) }}' } },
      ],
      edges: [
        { from: 'trigger', to: 'lookup' },
        { from: 'lookup', to: 'name' },
        { from: 'name', to: 'post' },
        { from: 'post', to: 'after' },
      ],
    });
    const tested = await acme.call('POST', `/api/v1/editable-flows/${created.body.id}/test`, { input: { body: {} } });
    expect(tested.body).toMatchObject({
      status: 'succeeded',
      dryRun: true,
      simulated: ['post'],
      readSimulated: ['after'],
    });
    // The GET went out; the POST did not, and shows what it would send, built from the GET's real answer.
    expect(received('/customers')).toHaveLength(1);
    expect(received('/dry-orders')).toHaveLength(0);
    const output = (key: string) => tested.body.steps.find((step: { key: string }) => step.key === key).output;
    expect(output('name')).toBe('200 ok');
    expect(output('post')).toMatchObject({ dryRun: true, wouldSend: { method: 'POST', body: { name: '200 ok' } } });
  });
});

describe('a webhook reply', () => {
  const replying = (key: string, before: object[]) => ({
    key,
    name: key,
    trigger: { type: 'webhook' },
    nodes: [
      ...before,
      {
        id: 'answer',
        operation: 'reply',
        config: {
          status: 201,
          headers: { 'X-Order': '{{ $input.body.id }}' },
          body: { order: '{{ $input.body.id }}', total: '{{ $input.body.total * 2 }}' },
        },
      },
      {
        id: 'send',
        operation: 'http.request',
        config: { method: 'POST', url: '{{ $vars.SINK_URL }}/after-reply', body: '{{ $steps.answer.body }}' },
      },
    ],
    edges: [
      ...before.map((node: any, index) => ({
        from: index === 0 ? 'trigger' : (before[index - 1] as any).id,
        to: node.id,
      })),
      { from: before.length > 0 ? (before.at(-1) as any).id : 'trigger', to: 'answer' },
      { from: 'answer', to: 'send' },
    ],
  });

  it("answers the sender with the reply node's status, headers and body; the run goes on after it", async () => {
    await acme.publish(replying('replies', []));
    const answered = await sendWebhook(env.url, 'acme', 'replies', { id: 'R-1', total: 21 });
    expect(answered.status).toBe(201);
    expect(answered.headers.get('x-order')).toBe('R-1');
    expect(answered.body).toEqual({ order: 'R-1', total: 42 });
    // The message was stored and its run goes on after the reply: the answer names both.
    const [message] = (await acme.call('GET', '/api/v1/messages?first=1')).body.nodes;
    expect(answered.headers.get('x-tributary-message-id')).toBe(message.id);
    expect(answered.headers.get('x-tributary-run-id')).toBe(message.runId);
    const run = await acme.settledRun(message.runId);
    expect(run.status).toBe('succeeded');
    expect(bodies('/after-reply')).toContainEqual({ order: 'R-1', total: 42 });
  });

  it("serves a reply as the tenant's content: never sniffed or scripted, no body where HTTP has none", async () => {
    const flowOf = (key: string, config: object) => ({
      key,
      name: key,
      trigger: { type: 'webhook' },
      nodes: [{ id: 'answer', operation: 'reply', config }],
      edges: [{ from: 'trigger', to: 'answer' }],
    });
    // As it comes: a redirect is not followed, a body not parsed.
    const deliver = (key: string, body: object) =>
      fetch(`${env.url}/hooks/acme/${key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        redirect: 'manual',
      });
    await acme.publish(
      flowOf('replies-html', {
        headers: { 'Content-Type': 'text/html', 'X-Content-Type-Options': 'sniff' },
        body: '<script>alert(document.cookie)</script>',
      }),
    );
    const html = await deliver('replies-html', {});
    expect(html.status).toBe(200);
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
    expect(html.headers.get('content-security-policy')).toContain('sandbox');
    expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");

    await acme.publish(flowOf('replies-empty', { status: 204, body: { ignored: true } }));
    const empty = await deliver('replies-empty', {});
    expect(empty.status).toBe(204);
    expect(empty.headers.get('content-length')).toBeNull();
    expect(empty.headers.get('content-type')).toBeNull();
    expect(await empty.text()).toBe('');

    // A redirect to a script is refused when written, and fails the node when computed.
    const refused = await acme.call(
      'POST',
      '/api/v1/editable-flows',
      flowOf('replies-script', { status: 302, headers: { Location: 'javascript:alert(1)' } }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((error: { path: string }) => error.path)).toContain(
      '$.body.nodes[0].config.headers.Location',
    );
    await acme.publish(flowOf('replies-computed', { status: 302, headers: { location: '{{ $input.body.to }}' } }));
    const computed = await deliver('replies-computed', { to: ' JavaScript:alert(1)' });
    expect(computed.status).toBe(202);
    expect((await acme.settledRun((await computed.json()).runId)).status).toBe('failed');
    const relative = await deliver('replies-computed', { to: '/orders/1?x=a:b' });
    expect([relative.status, relative.headers.get('location')]).toEqual([302, '/orders/1?x=a:b']);
  });

  it('answers 202 when the reply comes after REPLY_WAIT_MS, or never (the run failed first)', async () => {
    await acme.publish(replying('replies-late', [{ id: 'pause', operation: 'wait', config: { for: '3s' } }]));
    const late = await sendWebhook(env.url, 'acme', 'replies-late', { id: 'R-2', total: 1 });
    expect(late.status).toBe(202);
    const run = await acme.settledRun(late.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps.find((step: { key: string }) => step.key === 'answer').output).toMatchObject({ status: 201 });

    await acme.publish(
      replying('replies-never', [
        { id: 'check', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.SINK_URL }}/refuses' } },
      ]),
    );
    sink.script({ status: 400 });
    const never = await sendWebhook(env.url, 'acme', 'replies-never', { id: 'R-3', total: 1 });
    expect(never.status).toBe(202);
    expect((await acme.settledRun(never.body.runId)).status).toBe('failed');
  });
});

describe('a failure flow', () => {
  it("starts the named flow with the failed run's context, once; a failure flow's own failure starts nothing", async () => {
    // The failure flow reports to the sink, and names itself: its own failure must not start it again.
    const failures = {
      key: 'failures',
      name: 'failures',
      failureFlow: 'failures',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'report',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.SINK_URL }}/failures', body: '{{ $input.body }}' },
        },
      ],
      edges: [{ from: 'trigger', to: 'report' }],
    };
    const fragile = {
      key: 'fragile',
      name: 'fragile',
      failureFlow: 'failures',
      trigger: { type: 'webhook' },
      nodes: [
        { id: 'send', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.SINK_URL }}/fragile' } },
      ],
      edges: [{ from: 'trigger', to: 'send' }],
    };
    // Published before its failure flow exists: a warning, not a refusal.
    const created = await acme.call('POST', '/api/v1/editable-flows', fragile);
    const published = await acme.call('POST', `/api/v1/editable-flows/${created.body.id}/publish`, {});
    expect(published.status).toBe(201);
    expect(published.body.warnings).toEqual([
      {
        path: '$.draft.failureFlow',
        message: 'names no active flow of this tenant: failures (a failed run would start nothing)',
      },
    ]);
    const failuresId = await acme.publish(failures);

    sink.script({ status: 400, body: { error: 'no' } }, { status: 400, body: { error: 'no again' } });
    const accepted = await sendWebhook(env.url, 'acme', 'fragile', { id: 'F-1' });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('failed');

    const started = await eventually(async () => {
      const [message] = (await acme.call('GET', `/api/v1/messages?flowId=${failuresId}`)).body.nodes;
      if (!message) throw new Error('no failure run yet');
      return acme.settledRun(message.runId);
    });
    // The failure flow's run failed too (the sink refused it again), and started nothing more.
    expect(started.status).toBe('failed');
    const [report] = bodies('/failures');
    expect(report).toEqual({
      run: { id: run.id, flowId: run.flowId, flowVersion: run.flowVersion, messageId: run.messageId },
      flow: 'fragile',
      error: run.error,
      input: { body: { id: 'F-1' }, headers: expect.any(Object), query: {} },
    });
    expect((await acme.call('GET', `/api/v1/messages?flowId=${failuresId}`)).body.nodes).toHaveLength(1);
    expect(bodies('/failures')).toHaveLength(1);
  });
});

describe('a sub-flow', () => {
  it('flows/call-child.json calls flows/child.json, waits for its result, and sends it on; each run links the other', async () => {
    await acme.publish(example('child.json'));
    await acme.publish(example('call-child.json'));
    const accepted = await sendWebhook(env.url, 'acme', 'call-child', { n: 21 });
    const parent = await acme.settledRun(accepted.body.runId);
    expect(parent.status).toBe('succeeded');
    expect(bodies('/results')).toEqual([{ doubled: 42 }]);
    const call = parent.steps.find((step: { key: string }) => step.key === 'call');
    expect(call.output).toEqual({ doubled: 42 });
    const started = parent.steps.find((step: { key: string }) => step.key === 'call/call').output;
    // A time, as every other time the API gives.
    expect(new Date(started.calledAt).toISOString()).toBe(started.calledAt);
    const children = (await acme.call('GET', `/api/v1/runs?parentRunId=${parent.id}`)).body.nodes;
    expect(children).toEqual([
      expect.objectContaining({ id: started.runId, status: 'succeeded', parentRunId: parent.id, callDepth: 1 }),
    ]);
    expect(parent).toMatchObject({ parentRunId: null, callDepth: 0 });
    expect((await acme.call('GET', `/api/v1/runs/${started.runId}`)).body.result).toEqual({ doubled: 42 });
  });

  it('fails the call when the called run fails, naming it; a flow calling itself stops at the depth limit', async () => {
    await acme.publish({
      ...example('call-child.json'),
      key: 'call-missing',
      nodes: [{ id: 'call', operation: 'call', config: { flow: 'no-such-flow' } }],
      edges: [{ from: 'trigger', to: 'call' }],
    });
    const missing = await acme.settledRun((await sendWebhook(env.url, 'acme', 'call-missing', {})).body.runId);
    expect(missing).toMatchObject({ status: 'failed', error: { kind: 'permanent', node: 'call' } });
    expect(missing.error.message).toBe('flow no-such-flow is not active: there is nothing to call');

    await acme.publish({
      key: 'recurse',
      name: 'recurse',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'again', operation: 'call', config: { flow: 'recurse', input: '{{ $input.body }}' } }],
      edges: [{ from: 'trigger', to: 'again' }],
    });
    const top = await acme.settledRun((await sendWebhook(env.url, 'acme', 'recurse', { n: 1 })).body.runId);
    expect(top.status).toBe('failed');
    expect(top.error.message).toMatch(/^flow recurse ended failed: .*calls nest more than 5 deep/);
  });
});

describe('integers JavaScript cannot hold exactly (beyond 2^53 - 1)', () => {
  it("Shopify's sample order id reaches the flow and what it sends digit for digit, and the message shows it as it came", async () => {
    await acme.publish({
      key: 'big-ids',
      name: 'Big ids',
      trigger: { type: 'webhook', config: {} },
      nodes: [
        {
          id: 'send',
          operation: 'http.request',
          config: {
            method: 'POST',
            url: '{{ $vars.SINK_URL }}/big-ids',
            body: { id: '{{ $input.body.id }}', line: '{{ $input.body.lines[0] }}', small: '{{ $input.body.small }}' },
          },
        },
      ],
      edges: [{ from: 'trigger', to: 'send' }],
    });
    const body =
      '{"id": 820982911946154508, "lines": [{"id": -9007199254740993, "price": 12.5}], "small": 9007199254740991}';
    const accepted = await fetch(`${env.url}/hooks/acme/big-ids`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(accepted.status).toBe(202);
    const { runId, messageId } = await accepted.json();
    expect((await acme.settledRun(runId)).status).toBe('succeeded');
    // JSON.parse here would round them again: the texts are compared.
    const [sent] = received('/big-ids');
    expect(sent.body).toBe(
      '{"id":"820982911946154508","line":{"id":"-9007199254740993","price":12.5},"small":9007199254740991}',
    );
    const { text } = await acme.call('GET', `/api/v1/messages/${messageId}`);
    expect(text).toContain('"body":{"id": 820982911946154508, "lines": [{"id": -9007199254740993, "price": 12.5}]');
    expect(JSON.parse(text).id).toBe(messageId);
  });
});
