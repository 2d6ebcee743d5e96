import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineOperation } from '../engine/plugins/operations.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// What one hostile tenant can write must never stall or kill what every tenant shares.

/** Returns a value JSON cannot carry: the same on every try. */
const circular = defineOperation({
  name: 'test.circular',
  title: 'Circular output',
  description: 'Returns an object that contains itself.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: { type: 'object', additionalProperties: false, properties: {} },
  run: async () => {
    const value: Record<string, unknown> = { ok: true };
    value.self = value;
    return value;
  },
});

let env: TestPlatform;
let mallory: ApiClient;
let acme: ApiClient;

beforeAll(async () => {
  env = await startTestPlatform(
    'postgres',
    { api: true, worker: true },
    // Refusing non-public addresses is what a shared deployment (on PostgreSQL) does unless told otherwise.
    { expressionTimeoutMs: 3000, expressionMemoryMb: 64, outboundPrivateAddresses: 'refuse' },
    [circular],
  );
  mallory = await env.tenant('mallory');
  acme = await env.tenant('acme');
});
afterAll(async () => {
  await env?.close();
});

const transform = (expression: string, key = 'hostile') => ({
  key,
  name: key,
  trigger: { type: 'webhook' },
  nodes: [{ id: 'map', operation: 'transform', config: { expression } }],
  edges: [{ from: 'trigger', to: 'map' }],
});

/** A test run of a document (a dry run unless told otherwise): the answer. */
async function testRun(client: ApiClient, document: object, input: object = { body: {} }, dryRun = true) {
  const created = await client.call(
    'POST',
    '/api/v1/editable-flows',
    transform('{{ 1 }}', `t${Math.random().toString(36).slice(2, 8)}`),
  );
  expect(created.status).toBe(201);
  return client.call('POST', `/api/v1/editable-flows/${created.body.id}/test`, { document, input, dryRun });
}

describe('tenant expressions', () => {
  it('a runaway expression fails its node at EXPRESSION_TIMEOUT_MS, and /healthz answers while it runs', async () => {
    let settled = false;
    const running = testRun(mallory, transform('{{ $distinct([1..999999]) }}')).finally(() => (settled = true));
    // Give the request time to reach the sandbox, then ask the same process for its health.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const health = await fetch(`${env.url}/healthz`);
    expect(health.status).toBe(200);
    expect(settled).toBe(false);
    const answer = await running;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', node: 'map', message: expect.stringContaining('EXPRESSION_TIMEOUT_MS') },
    });
  });

  it('an expression past the memory cap fails its node; the process and other tenants go on', async () => {
    const answer = await testRun(mallory, transform('{{ $length($pad("x", 300000000)) }}'));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', message: expect.stringContaining('EXPRESSION_MEMORY_MB') },
    });
    const other = await testRun(acme, transform('{{ $sum([1..10]) }}'));
    expect(other.body).toMatchObject({ status: 'succeeded', steps: [{ output: 55 }] });
  });

  it("an expression outgrowing memory fails its run once; the worker runs the next tenant's message", async () => {
    await mallory.publish(transform('{{ $length($pad("x", $input.body.n)) }}'));
    await acme.publish(transform('{{ $join($input.body.words, " ") }}', 'words'));
    const hostile = await sendWebhook(env.url, 'mallory', 'hostile', { n: 300_000_000 });
    expect(hostile.status).toBe(202);
    const fine = await sendWebhook(env.url, 'acme', 'words', { words: ['one', 'run', 'each'] });
    const failed = await mallory.settledRun(hostile.body.runId);
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { kind: 'permanent', node: 'map', message: expect.stringContaining('EXPRESSION_MEMORY_MB') },
    });
    const succeeded = await acme.settledRun(fine.body.runId);
    expect(succeeded.steps).toMatchObject([{ nodeId: 'map', output: 'one run each' }]);
  });

  it('$document reads data spaces from the sandbox too', async () => {
    expect((await acme.call('PUT', '/api/v1/data-spaces/rates', {})).status).toBe(201);
    expect(
      (await acme.call('PUT', '/api/v1/data-spaces/rates/documents/EUR', { value: { rate: 2 } })).status,
    ).toBeLessThan(300);
    const answer = await testRun(
      acme,
      transform('{{ $map([1, 2], function($n) { $n * $document("rates", "EUR").rate }) }}'),
    );
    expect(answer.body).toMatchObject({ status: 'succeeded', steps: [{ output: [2, 4] }] });
  });
});

describe('tenant schemas', () => {
  it("an action's pattern runs in linear time: a catastrophic pattern and crafted input hold nothing", async () => {
    const path = '/api/v1/low-code-actions/actions/redos';
    // Backtracking engines take exponential time on ^(a|aa)+$ against "a…a!": 2^(n/2) steps here.
    const inputSchema = { type: 'object', properties: { code: { type: 'string', pattern: '^(a|aa)+$' } } };
    expect((await mallory.call('PUT', path, { expression: 'code', inputSchema, outputSchema: {} })).status).toBe(201);
    const answer = await testRun(mallory, {
      ...transform('{{ 1 }}'),
      nodes: [{ id: 'check', operation: 'action:redos', config: { input: { code: `${'a'.repeat(60)}!` } } }],
      edges: [{ from: 'trigger', to: 'check' }],
    });
    expect(answer.body).toMatchObject({
      status: 'failed',
      error: { kind: 'permanent', node: 'check', message: expect.stringContaining('must match pattern') },
    });
  });

  it("a pattern the linear engine cannot run (a backreference) is refused with its field's path", async () => {
    const refused = await mallory.call('PUT', '/api/v1/low-code-actions/actions/backref', {
      expression: 'code',
      inputSchema: { type: 'string', pattern: '(a)\\1' },
      outputSchema: {},
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      expect.objectContaining({
        path: '$.body.inputSchema',
        message: expect.stringContaining('invalid escape sequence'),
      }),
    ]);
  });
});

describe('outputs', () => {
  it('$steps is plain data: a node may output every output before it', async () => {
    const document = {
      key: 'steps',
      name: 'steps',
      trigger: { type: 'webhook' },
      nodes: [
        { id: 'first', operation: 'transform', config: { expression: '{{ {"id": $input.body.id} }}' } },
        { id: 'all', operation: 'transform', config: { expression: '{{ $steps }}' } },
      ],
      edges: [
        { from: 'trigger', to: 'first' },
        { from: 'first', to: 'all' },
      ],
    };
    const answer = await testRun(acme, document, { body: { id: 7 } });
    expect(answer.status).toBe(200);
    expect(answer.body.steps.map((step: { output: unknown }) => step.output)).toEqual([
      { id: 7 },
      { first: { id: 7 } },
    ]);
    await acme.publish(document);
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'steps', { id: 8 })).body.runId);
    expect(run).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('an output that cannot be stored fails its node at once, without retries', async () => {
    await acme.publish({
      key: 'circular',
      name: 'circular',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'loop', operation: 'test.circular', retry: { maxAttempts: 5, backoffMs: 10 } }],
      edges: [{ from: 'trigger', to: 'loop' }],
    });
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'circular', {})).body.runId);
    expect(run).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { kind: 'permanent', node: 'loop', message: expect.stringContaining('cannot be stored') },
    });
    expect(run.steps).toMatchObject([{ nodeId: 'loop', status: 'failed', attempts: 1 }]);
  });
});

describe('outbound requests', () => {
  it("a tenant's URL cannot reach this network's services: loopback, private and metadata addresses", async () => {
    const hits: string[] = [];
    const inside = http.createServer((request, response) => {
      hits.push(request.url ?? '');
      response.end('{"secret": true}');
    });
    await new Promise<void>((resolve) => inside.listen(0, '127.0.0.1', resolve));
    const { port } = inside.address() as AddressInfo;
    const call = (url: string, key = 'fetch') => ({
      key,
      name: key,
      trigger: { type: 'webhook' },
      nodes: [{ id: 'get', operation: 'http.request', config: { method: 'GET', url } }],
      edges: [{ from: 'trigger', to: 'get' }],
    });
    try {
      for (const [url, refused] of [
        [`http://127.0.0.1:${port}/admin`, '127.0.0.1 is a loopback address'],
        [`http://localhost:${port}/admin`, 'localhost is refused by the address policy'],
        [`http://[::ffff:127.0.0.1]:${port}/admin`, '::ffff:7f00:1 is a loopback address'],
        ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
        ['http://10.0.0.1/internal', '10.0.0.1 is a private address'],
      ]) {
        const answer = await testRun(mallory, call(url), { body: {} }, false);
        expect(answer.body, url).toMatchObject({ status: 'failed', error: { kind: 'permanent', node: 'get' } });
        expect(answer.body.error.message).toContain(refused);
        expect(answer.body.error.message).toContain('OUTBOUND_PRIVATE_ADDRESSES');
      }
      // A published flow: the run fails at once, without the node's retries.
      await mallory.publish(call(`http://localhost:${port}/admin`, 'inside'));
      const run = await mallory.settledRun((await sendWebhook(env.url, 'mallory', 'inside', {})).body.runId);
      expect(run).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'permanent', node: 'get' } });
      expect(run.steps).toMatchObject([{ nodeId: 'get', status: 'failed', attempts: 1 }]);
      expect(hits).toEqual([]);
    } finally {
      inside.close();
    }
  });

  it('refuses a destination whose shop or ERP is a non-public address when it is saved', async () => {
    const destination = (graphqlUrl: string, apiUrl: string) => ({
      type: 'shopify',
      operation: 'shopify.orders-import-list',
      graphqlUrl,
      adminApiAccessToken: 'shpat_unused-token',
      erp: {
        apiUrl,
        consumerKey: 'consumer-key',
        consumerSecret: 'consumer-secret',
        tokenId: 'token-id',
        tokenSecret: 'token-secret',
        accountId: '1',
      },
    });
    const refused = await mallory.call(
      'PUT',
      '/api/v1/destinations/inside',
      destination('http://localhost:6379/', 'http://169.254.169.254/latest/meta-data/'),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      { path: '$.body.graphqlUrl', message: expect.stringContaining('points at localhost, a loopback name') },
      { path: '$.body.erp.apiUrl', message: expect.stringContaining('169.254.169.254, a link-local address') },
    ]);
    const outside = destination('https://demo.myshopify.com/', 'https://1.restlets.api.netsuite.com/app');
    expect((await mallory.call('PUT', '/api/v1/destinations/outside', outside)).status).toBe(201);
  });
});
