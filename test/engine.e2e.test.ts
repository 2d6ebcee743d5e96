import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

// The embedded mode: PGlite store, API and worker in one process.
let env: TestPlatform;
let acme: ApiClient;
let receiver: Receiver;

beforeAll(async () => {
  env = await startTestPlatform('pglite');
  acme = await env.tenant('acme');
  receiver = await new Receiver().start();
  await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: receiver.url });
});
afterAll(async () => {
  await receiver?.close();
  await env?.close();
});

const received = (path: string) => receiver.requests.filter((request) => request.url === path);

const flow = (key: string, nodes: object[], edges: object[], trigger: object = { type: 'webhook', config: {} }) => ({
  key,
  name: key,
  trigger,
  nodes,
  edges,
});
const post = (id: string, path: string, extra: object = {}) => ({
  id,
  operation: 'http.request',
  config: { method: 'POST', url: `{{ $vars.ERP_URL }}${path}`, body: '{{ $steps.map }}' },
  retry: { maxAttempts: 3, backoffMs: 10 },
  ...extra,
});
const map = {
  id: 'map',
  operation: 'transform',
  config: { expression: "{{ {'id': $input.body.id, 'shop': $input.headers.`x-shop`} }}" },
};

describe('a webhook through a published flow', () => {
  it('runs transform then http.request and records each step', async () => {
    await acme.publish(
      flow(
        'e2e',
        [map, post('send', '/orders')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
        ],
        // A header beyond the usual ones is kept only when the trigger asks for it.
        { type: 'webhook', config: { keepHeaders: ['X-Shop'] } },
      ),
    );
    const accepted = await sendWebhook(env.url, 'acme', 'e2e', { id: 42 }, { 'x-shop': 'demo.myshopify.com' });
    expect(accepted.status).toBe(202);
    const run = await acme.settledRun(accepted.body.runId);
    expect(run).toMatchObject({ status: 'succeeded', messageId: accepted.body.messageId, attempts: 1, error: null });
    expect(run.steps.map((step: { nodeId: string; status: string }) => [step.nodeId, step.status])).toEqual([
      ['map', 'succeeded'],
      ['send', 'succeeded'],
    ]);
    expect(run.steps[0].output).toEqual({ id: 42, shop: 'demo.myshopify.com' });
    expect(run.steps[1].output).toMatchObject({
      status: 200,
      body: { received: { id: 42, shop: 'demo.myshopify.com' } },
    });
    const [request] = received('/orders');
    expect(JSON.parse(request.body)).toEqual({ id: 42, shop: 'demo.myshopify.com' });
    expect(request.headers['idempotency-key']).toBe(`${run.messageId}.send`);
  });

  it("runs a large body (kept as text until read) through the flow's expressions and sends what they make", async () => {
    await acme.publish(
      flow(
        'large',
        [
          { id: 'gate', operation: 'filter', config: { condition: '{{ $count($input.body.items[price > 10]) > 0 }}' } },
          {
            id: 'map',
            operation: 'transform',
            config: {
              expression:
                "{{ {'id': $input.body.id, 'first': $input.body.items[0].sku, 'dear': $count($input.body.items[price > 10])} }}",
            },
          },
          post('send', '/large'),
        ],
        [
          { from: 'trigger', to: 'gate' },
          { from: 'gate', to: 'map' },
          { from: 'map', to: 'send' },
        ],
      ),
    );
    // About 200 KB: over the size at which a run keeps its body as text until it reads it.
    const items = Array.from({ length: 3000 }, (_, i) => ({ sku: `SKU-${i}`, price: i % 20, note: 'n'.repeat(30) }));
    const accepted = await sendWebhook(env.url, 'acme', 'large', { id: 9, items });
    expect(accepted.status).toBe(202);
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps[1].output).toEqual({ id: 9, first: 'SKU-0', dear: 1350 });
    expect(JSON.parse(received('/large')[0].body)).toEqual({ id: 9, first: 'SKU-0', dear: 1350 });
  });

  it('runs a repeated delivery once and answers with the first message', async () => {
    await acme.publish(
      flow(
        'dedupe',
        [map, post('send', '/dedupe')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
        ],
      ),
    );
    const deliveries = [];
    for (let i = 0; i < 3; i++)
      deliveries.push(await sendWebhook(env.url, 'acme', 'dedupe', { id: 7 }, { 'Idempotency-Key': 'delivery-7' }));
    expect(deliveries.map((d) => d.status)).toEqual([202, 200, 200]);
    expect(new Set(deliveries.map((d) => d.body.messageId)).size).toBe(1);
    const run = await acme.settledRun(deliveries[0].body.runId);
    const runs = await acme.call('GET', `/api/v1/runs?flowId=${run.flowId}`);
    expect(runs.body.nodes).toHaveLength(1);
    expect(received('/dedupe')).toHaveLength(1);
  });

  it('performs an earlier side effect once when a later node fails and is retried', async () => {
    receiver.script({ status: 200 }, { status: 503, body: { error: 'busy' } });
    await acme.publish(
      flow(
        'once',
        [map, post('first', '/first'), post('second', '/second')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'first' },
          { from: 'first', to: 'second' },
        ],
      ),
    );
    const accepted = await sendWebhook(env.url, 'acme', 'once', { id: 1 });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(received('/first')).toHaveLength(1);
    expect(received('/second')).toHaveLength(2);
    expect(run.steps.find((step: { nodeId: string }) => step.nodeId === 'second').attempts).toBe(2);
    expect(run.attempts).toBe(2);
  });

  it('fails the run at once on a permanent error, with the remote reason', async () => {
    receiver.script({ status: 422, body: { error: 'order total is negative' } });
    await acme.publish(
      flow(
        'permanent',
        [map, post('send', '/rejects')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
        ],
      ),
    );
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'permanent', { id: 2 })).body.runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({
      kind: 'permanent',
      node: 'send',
      message: expect.stringContaining('422'),
      details: { status: 422, body: { error: 'order total is negative' } },
    });
    expect(received('/rejects')).toHaveLength(1);
  });

  it('stores an output carrying \\u0000 with U+FFFD in its place', async () => {
    receiver.script({ status: 200, body: { note: 'nul\u0000here' } });
    await acme.publish(
      flow(
        'nul-output',
        [map, post('send', '/nul')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
        ],
      ),
    );
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'nul-output', { id: 4 })).body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps[1].output.body).toEqual({ note: 'nul\ufffdhere' });
  });

  it('fails a node whose response is over maxResponseBytes, and retries one that does not answer in time', async () => {
    receiver.script({ status: 200, body: { big: 'x'.repeat(5000) } }, 'hang');
    await acme.publish(
      flow(
        'limits',
        [
          {
            id: 'big',
            operation: 'http.request',
            config: { url: '{{ $vars.ERP_URL }}/big-answer', maxResponseBytes: 1000 },
          },
        ],
        [{ from: 'trigger', to: 'big' }],
      ),
    );
    const big = await acme.settledRun((await sendWebhook(env.url, 'acme', 'limits', {})).body.runId);
    expect(big.error).toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining('exceeds maxResponseBytes (1000)'),
    });
    await acme.publish(
      flow(
        'slow',
        [
          {
            id: 'slow',
            operation: 'http.request',
            config: { url: '{{ $vars.ERP_URL }}/slow', timeoutMs: 200 },
            retry: { maxAttempts: 2, backoffMs: 10 },
          },
        ],
        [{ from: 'trigger', to: 'slow' }],
      ),
    );
    const slow = await acme.settledRun((await sendWebhook(env.url, 'acme', 'slow', {})).body.runId);
    expect(slow.status).toBe('succeeded');
    expect(slow.steps[0].attempts).toBe(2);
    expect(received('/slow')).toHaveLength(2);
  });

  it('fails at once, naming the node, when a resolved config breaks its schema or a condition fails', async () => {
    await acme.publish(
      flow(
        'bad-config',
        [{ id: 'send', operation: 'http.request', config: { url: '{{ $input.body.target }}', method: 'POST' } }],
        [{ from: 'trigger', to: 'send' }],
      ),
    );
    const badConfig = await acme.settledRun(
      (await sendWebhook(env.url, 'acme', 'bad-config', { target: 'ftp://nowhere' })).body.runId,
    );
    expect(badConfig.status).toBe('failed');
    expect(badConfig.error).toMatchObject({
      kind: 'permanent',
      node: 'send',
      message: expect.stringContaining('config.url'),
    });
    expect(badConfig.attempts).toBe(1);

    await acme.publish(
      flow(
        'bad-edge',
        [map, post('send', '/never')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send', when: '{{ $error("no routing for this order") }}' },
        ],
      ),
    );
    const badEdge = await acme.settledRun((await sendWebhook(env.url, 'acme', 'bad-edge', { id: 1 })).body.runId);
    expect(badEdge.status).toBe('failed');
    expect(badEdge.error).toMatchObject({
      kind: 'permanent',
      node: 'send',
      message: expect.stringContaining('no routing for this order'),
    });
    expect(received('/never')).toHaveLength(0);
  });

  it("gives up after the node's attempts and says so", async () => {
    receiver.script({ status: 500 }, { status: 500 }, { status: 500 });
    await acme.publish(
      flow(
        'gives-up',
        [map, post('send', '/down')],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'send' },
        ],
      ),
    );
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'gives-up', { id: 3 })).body.runId);
    expect(run.status).toBe('failed');
    expect(run.error.message).toMatch(/gave up after 3 attempts/);
    expect(received('/down')).toHaveLength(3);
  });

  it('ends as filtered when a filter does not hold, and follows only edges whose condition holds', async () => {
    await acme.publish(
      flow(
        'routing',
        [
          map,
          {
            id: 'gate',
            operation: 'filter',
            config: { condition: '{{ $input.body.id > 10 }}', reason: 'small orders stay out' },
          },
          post('big', '/big'),
          post('vip', '/vip'),
        ],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'gate' },
          { from: 'gate', to: 'big' },
          { from: 'gate', to: 'vip', when: "{{ $input.body.tier = 'vip' }}" },
        ],
      ),
    );
    const small = await acme.settledRun((await sendWebhook(env.url, 'acme', 'routing', { id: 5 })).body.runId);
    expect(small.status).toBe('filtered');
    expect(small.steps.find((step: { nodeId: string }) => step.nodeId === 'gate')).toMatchObject({
      status: 'filtered',
      output: { reason: 'small orders stay out' },
    });
    // One word for one outcome: its message says filtered too.
    expect((await acme.call('GET', `/api/v1/messages/${small.messageId}`)).body.status).toBe('filtered');
    const big = await acme.settledRun(
      (await sendWebhook(env.url, 'acme', 'routing', { id: 50, tier: 'basic' })).body.runId,
    );
    expect(big.status).toBe('succeeded');
    expect(big.steps.map((step: { nodeId: string }) => step.nodeId)).toEqual(['map', 'gate', 'big']);
    expect(received('/big')).toHaveLength(1);
    expect(received('/vip')).toHaveLength(0);
  });

  it('runs the version that was active when the message arrived', async () => {
    const id = await acme.publish(
      flow(
        'pinned',
        [{ id: 'which', operation: 'transform', config: { expression: 'v1' } }],
        [{ from: 'trigger', to: 'which' }],
      ),
    );
    const first = await acme.settledRun((await sendWebhook(env.url, 'acme', 'pinned', {})).body.runId);
    const current = (await acme.call('GET', `/api/v1/editable-flows/${id}`)).body;
    await acme.call('PUT', `/api/v1/editable-flows/${id}`, {
      revision: current.revision,
      document: flow(
        'pinned',
        [{ id: 'which', operation: 'transform', config: { expression: 'v2' } }],
        [{ from: 'trigger', to: 'which' }],
      ),
    });
    expect((await acme.call('POST', `/api/v1/editable-flows/${id}/publish`)).body.version).toBe(2);
    const second = await acme.settledRun((await sendWebhook(env.url, 'acme', 'pinned', {})).body.runId);
    expect([first.flowVersion, first.steps[0].output]).toEqual([1, 'v1']);
    expect([second.flowVersion, second.steps[0].output]).toEqual([2, 'v2']);
    await acme.call('POST', `/api/v1/flows/${id}/deactivate`);
    expect((await sendWebhook(env.url, 'acme', 'pinned', {})).status).toBe(404);
  });
});

describe('secrets', () => {
  it('resolves $secrets at run time and keeps the value out of responses, run records and logs', async () => {
    const secret = 'sk_live_do-not-leak-9f8e7d';
    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: secret });
    await acme.publish(
      flow(
        'secretive',
        [
          {
            id: 'call',
            operation: 'http.request',
            config: {
              method: 'POST',
              url: '{{ $vars.ERP_URL }}/secure',
              body: { echo: '{{ "Bearer " & $secrets.ERP_TOKEN }}' },
              auth: { type: 'bearer', token: '{{ $secrets.ERP_TOKEN }}' },
            },
          },
        ],
        [{ from: 'trigger', to: 'call' }],
      ),
    );
    const accepted = await sendWebhook(env.url, 'acme', 'secretive', { id: 9 });
    const run = await acme.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(received('/secure')[0].headers.authorization).toBe(`Bearer ${secret}`);
    const everything =
      JSON.stringify(run) +
      (await acme.call('GET', '/api/v1/runs')).text +
      (await acme.call('GET', '/api/v1/secret-global-variables')).text;
    expect(everything).not.toContain(secret);
    expect(run.steps[0].output.body.received.echo).toBe('Bearer [REDACTED]');
    expect(env.lines.join('\n')).not.toContain(secret);
  });
});

describe('webhook verification', () => {
  it('accepts a correct HMAC signature and refuses a bad or missing one without recording it', async () => {
    await acme.call('PUT', '/api/v1/secret-global-variables/HOOK_KEY', { value: 'hook-signing-key' });
    const id = await acme.publish(
      flow('signed', [map], [{ from: 'trigger', to: 'map' }], {
        type: 'webhook',
        config: {
          verify: { type: 'hmac-sha256', header: 'X-Signature', secret: 'HOOK_KEY', encoding: 'base64' },
          deliveryIdHeader: 'X-Delivery',
        },
      }),
    );
    const body = JSON.stringify({ id: 11 });
    const signature = createHmac('sha256', 'hook-signing-key').update(body).digest('base64');
    expect(
      (await sendWebhook(env.url, 'acme', 'signed', body, { 'X-Signature': `AAAA${signature.slice(4)}` })).status,
    ).toBe(401);
    expect((await sendWebhook(env.url, 'acme', 'signed', body)).status).toBe(401);
    expect((await acme.call('GET', `/api/v1/runs?flowId=${id}`)).body.nodes).toHaveLength(0);
    const good = await sendWebhook(env.url, 'acme', 'signed', body, { 'X-Signature': signature, 'X-Delivery': 'd-1' });
    expect(good.status).toBe(202);
    const again = await sendWebhook(env.url, 'acme', 'signed', body, { 'X-Signature': signature, 'X-Delivery': 'd-1' });
    expect(again.body).toMatchObject({ messageId: good.body.messageId, duplicate: true });
    const run = await acme.settledRun(good.body.runId);
    expect(run.steps[0].output).toEqual({ id: 11 });
    // Rotated: the new key verifies at once, the old one no longer does.
    await acme.call('PUT', '/api/v1/secret-global-variables/HOOK_KEY', { value: 'hook-signing-key-2' });
    const rotated = createHmac('sha256', 'hook-signing-key-2').update(body).digest('base64');
    expect((await sendWebhook(env.url, 'acme', 'signed', body, { 'X-Signature': signature })).status).toBe(401);
    expect((await sendWebhook(env.url, 'acme', 'signed', body, { 'X-Signature': rotated })).status).toBe(202);
  });
});

describe('Shopify webhooks', () => {
  // Signed as Shopify signs: HMAC-SHA256 of the raw body with the app's client secret, base64.
  const sign = (body: string, secret: string) => createHmac('sha256', secret).update(body).digest('base64');
  const delivery = (webhookId: string, topic = 'refunds/create') => ({
    'X-Shopify-Topic': topic,
    'X-Shopify-Webhook-Id': webhookId,
    'X-Shopify-Shop-Domain': 'demo.myshopify.com',
    'X-Shopify-API-Version': '2025-10',
    'X-Shopify-Event-Id': 'event-1',
    'X-Shopify-Triggered-At': '2026-11-21T10:00:00Z',
  });
  // Ids beyond 2^53 arrive as JSON numbers: flows key on the GID string.
  const body =
    '{"id":890088186047892319,"admin_graphql_api_id":"gid://shopify/Refund/890088186047892319","order_id":450789469}';

  it('verifies the signature (also with the previous secret), checks the topic, drops repeat deliveries', async () => {
    await acme.call('PUT', '/api/v1/secret-global-variables/SHOPIFY_SECRET', { value: 'new-client-secret' });
    await acme.call('PUT', '/api/v1/secret-global-variables/SHOPIFY_SECRET_OLD', { value: 'old-client-secret' });
    const flowId = await acme.publish(
      flow(
        'refunds',
        [
          {
            id: 'refund',
            operation: 'transform',
            config: {
              expression:
                "{{ {'refund': $input.body.admin_graphql_api_id, 'shop': $input.headers.`x-shopify-shop-domain`, " +
                "'webhook': $input.headers.`x-shopify-webhook-id`} }}",
            },
          },
        ],
        [{ from: 'trigger', to: 'refund' }],
        {
          type: 'webhook',
          config: {
            verify: {
              type: 'shopify',
              secret: 'SHOPIFY_SECRET',
              previousSecret: 'SHOPIFY_SECRET_OLD',
              topic: 'refunds/create',
            },
          },
        },
      ),
    );

    const first = await sendWebhook(env.url, 'acme', 'refunds', body, {
      ...delivery('w-1'),
      'X-Shopify-Hmac-Sha256': sign(body, 'new-client-secret'),
    });
    expect(first.status).toBe(202);
    const again = await sendWebhook(env.url, 'acme', 'refunds', body, {
      ...delivery('w-1'),
      'X-Shopify-Hmac-Sha256': sign(body, 'new-client-secret'),
    });
    expect(again).toMatchObject({ status: 200, body: { messageId: first.body.messageId, duplicate: true } });
    const rotated = await sendWebhook(env.url, 'acme', 'refunds', body, {
      ...delivery('w-2'),
      'X-Shopify-Hmac-Sha256': sign(body, 'old-client-secret'),
    });
    expect(rotated.status).toBe(202);

    expect(
      (
        await sendWebhook(env.url, 'acme', 'refunds', body, {
          ...delivery('w-3'),
          'X-Shopify-Hmac-Sha256': sign(body, 'someone-else'),
        })
      ).status,
    ).toBe(401);
    expect((await sendWebhook(env.url, 'acme', 'refunds', body, delivery('w-4'))).status).toBe(401);
    const wrongTopic = await sendWebhook(env.url, 'acme', 'refunds', body, {
      ...delivery('w-5', 'orders/create'),
      'X-Shopify-Hmac-Sha256': sign(body, 'new-client-secret'),
    });
    expect(wrongTopic.status).toBe(400);
    expect(wrongTopic.body.errors).toEqual([
      { path: '$.headers["x-shopify-topic"]', message: expect.stringContaining('refunds/create') },
    ]);

    const run = await acme.settledRun(first.body.runId);
    expect(run.steps[0].output).toEqual({
      refund: 'gid://shopify/Refund/890088186047892319',
      shop: 'demo.myshopify.com',
      webhook: 'w-1',
    });
    await acme.settledRun(rotated.body.runId);
    expect((await acme.call('GET', `/api/v1/runs?flowId=${flowId}`)).body.nodes).toHaveLength(2);
  });
});
