import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TracingConfigError, tracingSettings } from '../bin/tracing.ts';
import { parseTraceparent } from '../engine/telemetry/index.ts';
import { crash } from './support/crash-operation.ts';
import {
  eventually,
  sendWebhook,
  spawnWorker,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';
import { Receiver } from './support/receiver.ts';

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;
const INTERNAL = 1;

const SECRET = 'sk_live_never_in_a_span';
const BODY_MARK = 'refund-body-marker';

/** Forwards the body to the sink with a secret in a header; retried after a 503, 10 ms apart. */
const tracedFlow = {
  key: 'traced',
  name: 'Traced',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    { id: 'shape', operation: 'transform', config: { expression: '{{ {"note": $input.body.note} }}' } },
    {
      id: 'forward',
      operation: 'http.request',
      config: {
        method: 'POST',
        url: '{{ $vars.SINK_URL }}/erp',
        headers: { authorization: 'Bearer {{ $secrets.ERP_TOKEN }}' },
        body: '{{ $steps.shape }}',
      },
      retry: { maxAttempts: 3, backoffMs: 10 },
    },
  ],
  edges: [
    { from: 'trigger', to: 'shape' },
    { from: 'shape', to: 'forward' },
  ],
};

/**
 * Three pure nodes: the filter stops the run unless `go`; the transform fails when asked to `refuse`; the loop posts
 * each of the `items` there are.
 */
const pureFlow = {
  key: 'pure',
  name: 'Pure',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    { id: 'gate', operation: 'filter', config: { condition: '{{ $input.body.go }}' } },
    {
      id: 'shape',
      operation: 'transform',
      config: { expression: '{{ $input.body.refuse ? $error("refused") : {"ok": true} }}' },
    },
    {
      id: 'each',
      operation: 'loop',
      config: { items: '{{ $exists($input.body.items) ? $input.body.items : [] }}', concurrency: 1 },
      nodes: [
        {
          id: 'post',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.SINK_URL }}/items', body: '{{ {"item": $item} }}' },
        },
      ],
    },
  ],
  edges: [
    { from: 'trigger', to: 'gate' },
    { from: 'gate', to: 'shape' },
    { from: 'shape', to: 'each' },
  ],
};

const hexId = (bytes: number) => randomBytes(bytes).toString('hex');

const KIND_NAMES = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

/** The trace as an indented tree, written under $TMPDIR/tributary-traces/ for a person to read. */
function writeTree(protocol: string, spans: ReceivedSpan[]) {
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    for (const span of spans.filter((candidate) => candidate.parentSpanId === parent)) {
      const shown = Object.entries(span.attributes)
        .filter(([key]) =>
          /^(tributary\.(node\.(id|attempt|outcome)|run\.(attempt|status))|http\.response|error)/.test(key),
        )
        .map(([key, value]) => `${key}=${value}`);
      lines.push(`${'  '.repeat(depth)}${span.name} [${KIND_NAMES[span.kind]}] ${span.spanId} ${shown.join(' ')}`);
      walk(span.spanId, depth + 1);
    }
  };
  const roots = new Set(
    spans.map((span) => span.parentSpanId).filter((id) => !spans.some((span) => span.spanId === id)),
  );
  for (const root of roots) {
    lines.push(`(${root}: the sender's span) trace ${spans[0].traceId}`);
    walk(root, 1);
  }
  const folder = path.join(os.tmpdir(), 'tributary-traces');
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, `${protocol.replace('/', '-')}.txt`), `${lines.join('\n')}\n`);
}

describe.each([
  ['http/protobuf', 'pglite'],
  ['http/json', 'postgres'],
] as const)('traces over OTLP %s (%s)', (protocol, store) => {
  let collector: OtlpReceiver;
  let sink: Receiver;
  let env: TestPlatform;
  let acme: ApiClient;

  beforeAll(async () => {
    collector = await new OtlpReceiver().start();
    // The ERP is down for the first request: the node is retried in a second pass.
    sink = await new Receiver().start();
    env = await startTestPlatform(store, undefined, {}, [], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'tributary-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    acme = await env.tenant('acme');
    await acme.call('PUT', '/api/v1/global-variables/SINK_URL', { value: sink.url });
    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: SECRET });
    await acme.publish(tracedFlow);
  });
  afterAll(async () => {
    await env?.close();
    await sink?.close();
    await collector?.close();
  });

  it("continues the sender's trace through the delivery, every attempt of the run, each node and its requests", async () => {
    const traceId = hexId(16);
    const senderSpan = hexId(8);
    sink.script({ status: 503, body: { error: 'maintenance' } });
    const delivered = await sendWebhook(
      env.url,
      'acme',
      'traced',
      { note: BODY_MARK },
      {
        traceparent: `00-${traceId}-${senderSpan}-01`,
      },
    );
    expect(delivered.status).toBe(202);
    const run = await acme.settledRun(delivered.body.runId);
    expect(run.status).toBe('succeeded');

    // Two passes: the first ends waiting on the 503, the second succeeds.
    const spans = await eventually(async () => {
      const found = collector.trace(traceId);
      expect(found.filter((span) => span.kind === CLIENT)).toHaveLength(2);
      expect(found.filter((span) => span.kind === CONSUMER)).toHaveLength(2);
      return found;
    });
    const one = (kind: number) => {
      const matching = spans.filter((span) => span.kind === kind);
      expect(matching).toHaveLength(1);
      return matching[0];
    };
    const server = one(SERVER);
    expect(server).toMatchObject({ name: 'POST /hooks/{tenantId}/{flowKey}', parentSpanId: senderSpan, protocol });
    expect(server.attributes).toMatchObject({
      'http.route': '/hooks/{tenantId}/{flowKey}',
      'http.response.status_code': 202,
    });
    expect(server.resource).toMatchObject({
      'service.name': 'tributary-under-test',
      'deployment.environment.name': 'test',
      'tributary.role': 'serve',
    });

    const send = one(PRODUCER);
    expect(send).toMatchObject({ name: 'send traced', parentSpanId: server.spanId });
    expect(send.attributes).toMatchObject({
      'messaging.system': 'tributary',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'traced',
      'messaging.message.id': delivered.body.messageId,
      'tributary.tenant.id': 'acme',
      'tributary.flow.key': 'traced',
      'tributary.flow.version': 1,
      'tributary.run.id': delivered.body.runId,
      'tributary.delivery.outcome': 'accepted',
    });

    const passes = spans
      .filter((span) => span.kind === CONSUMER)
      .sort((a, b) => Number(a.attributes['tributary.run.attempt']) - Number(b.attributes['tributary.run.attempt']));
    for (const [index, pass] of passes.entries()) {
      expect(pass).toMatchObject({ name: 'process traced', parentSpanId: send.spanId });
      expect(pass.links).toEqual([{ traceId, spanId: send.spanId }]);
      expect(pass.attributes).toMatchObject({
        'messaging.operation.type': 'process',
        'messaging.message.id': delivered.body.messageId,
        'tributary.run.id': delivered.body.runId,
        'tributary.run.attempt': index + 1,
        'tributary.run.status': index === 0 ? 'wait' : 'succeeded',
      });
    }

    const nodes = spans.filter((span) => span.kind === INTERNAL);
    const nodeSpan = (id: string, attempt: number) =>
      nodes.find(
        (span) => span.attributes['tributary.node.id'] === id && span.attributes['tributary.node.attempt'] === attempt,
      );
    // The transform is pure, sends nothing and succeeds: its step has its timing, and it is no span.
    expect(nodes.filter((span) => span.attributes['tributary.node.id'] === 'shape')).toEqual([]);
    const failedTry = nodeSpan('forward', 1)!;
    const secondTry = nodeSpan('forward', 2)!;
    expect(failedTry).toMatchObject({ name: 'http.request', parentSpanId: passes[0].spanId, statusCode: 2 });
    expect(failedTry.attributes).toMatchObject({ 'tributary.node.outcome': 'waiting', 'error.type': 'retryable' });
    expect(secondTry).toMatchObject({ parentSpanId: passes[1].spanId, statusCode: 0 });
    expect(secondTry.attributes['tributary.node.outcome']).toBe('succeeded');

    const requests = spans.filter((span) => span.kind === CLIENT);
    const requestOf = (node: ReceivedSpan) => requests.find((span) => span.parentSpanId === node.spanId)!;
    expect(requestOf(failedTry)).toMatchObject({ name: 'POST', statusCode: 2 });
    expect(requestOf(failedTry).attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 503,
      'server.address': '127.0.0.1',
      'url.full': `${sink.url}/erp`,
      'error.type': '503',
    });
    expect(requestOf(secondTry).attributes['http.response.status_code']).toBe(200);

    // The ERP saw each request as a child of its client span, in the same trace.
    const seen = sink.requests.map((request) => parseTraceparent(request.headers.traceparent as string));
    expect(seen).toEqual([
      { traceId, spanId: requestOf(failedTry).spanId, sampled: true },
      { traceId, spanId: requestOf(secondTry).spanId, sampled: true },
    ]);

    writeTree(protocol, spans);

    // Neither the body nor the secret is in any span.
    const exported = JSON.stringify(collector.spans, (_, value) => (typeof value === 'bigint' ? `${value}` : value));
    expect(exported).not.toContain(BODY_MARK);
    expect(exported).not.toContain(SECRET);

    // The run's page names its trace.
    const link = await acme.call('POST', `/api/v1/runs/${delivered.body.runId}/page-link`, {});
    expect(await (await fetch(link.body.url)).text()).toContain(`<code>${traceId}</code>`);

    // The delivery's log line names its trace and span.
    const line = env.lines.map((text) => JSON.parse(text)).find((entry) => entry.path === '/hooks/acme/traced');
    expect(line).toMatchObject({ trace_id: traceId, span_id: server.spanId });
  });

  it('makes a span of a pure node that stops the run or fails, not of one that just succeeds', async () => {
    await acme.publish(pureFlow);
    const deliver = async (body: object) => {
      const traceId = hexId(16);
      const delivered = await sendWebhook(env.url, 'acme', 'pure', body, {
        traceparent: `00-${traceId}-${hexId(8)}-01`,
      });
      expect(delivered.status).toBe(202);
      const run = await acme.settledRun(delivered.body.runId);
      const spans = await eventually(async () => {
        const found = collector.trace(traceId);
        expect(found.filter((span) => span.kind === CONSUMER)).toHaveLength(1);
        return found;
      });
      const pass = spans.find((span) => span.kind === CONSUMER)!;
      const nodes = spans.filter((span) => span.kind === INTERNAL && span.parentSpanId === pass.spanId);
      return { run, pass, nodes, spans };
    };

    const filtered = await deliver({ go: false });
    expect(filtered.run.status).toBe('filtered');
    expect(filtered.nodes).toHaveLength(1);
    expect(filtered.nodes[0]).toMatchObject({ name: 'filter', statusCode: 0 });
    expect(filtered.nodes[0].attributes).toMatchObject({
      'tributary.node.id': 'gate',
      'tributary.node.outcome': 'filtered',
      'tributary.node.attempt': 1,
    });

    const failed = await deliver({ go: true, refuse: true });
    expect(failed.run.status).toBe('failed');
    expect(failed.nodes).toHaveLength(1);
    expect(failed.nodes[0]).toMatchObject({ name: 'transform', statusCode: 2 });
    expect(failed.nodes[0].attributes).toMatchObject({
      'tributary.node.id': 'shape',
      'tributary.node.outcome': 'failed',
      'error.type': 'permanent',
    });
    // Made after the node began, it still lies within its pass.
    expect(failed.nodes[0].startTimeUnixNano).toBeGreaterThanOrEqual(failed.pass.startTimeUnixNano);
    expect(failed.nodes[0].endTimeUnixNano).toBeGreaterThanOrEqual(failed.nodes[0].startTimeUnixNano);
    expect(failed.nodes[0].endTimeUnixNano).toBeLessThanOrEqual(failed.pass.endTimeUnixNano);

    // The loop has no items: nothing inside it, and no span of its own.
    const succeeded = await deliver({ go: true });
    expect(succeeded.run.status).toBe('succeeded');
    expect(succeeded.pass.attributes['tributary.run.status']).toBe('succeeded');
    expect(succeeded.spans.filter((span) => span.kind === INTERNAL)).toEqual([]);

    // With items, the loop is a span from its start: the parent of its items' nodes, each with its request.
    const looped = await deliver({ go: true, items: [1, 2] });
    expect(looped.run.status).toBe('succeeded');
    expect(looped.nodes.map((span) => span.attributes['tributary.node.id'])).toEqual(['each']);
    const [loop] = looped.nodes;
    expect(loop.attributes['tributary.node.outcome']).toBe('succeeded');
    const posts = looped.spans.filter((span) => span.attributes['tributary.node.id'] === 'post');
    expect(posts.map((span) => span.attributes['tributary.step.key']).sort()).toEqual(['each[0].post', 'each[1].post']);
    for (const post of posts) {
      expect(post.parentSpanId).toBe(loop.spanId);
      expect(post.startTimeUnixNano).toBeGreaterThanOrEqual(loop.startTimeUnixNano);
      expect(looped.spans.filter((span) => span.kind === CLIENT && span.parentSpanId === post.spanId)).toHaveLength(1);
    }
  });

  it('starts a trace of its own for a delivery without a valid traceparent', async () => {
    const before = new Set(collector.spans.map((span) => span.traceId));
    const delivered = await sendWebhook(
      env.url,
      'acme',
      'traced',
      { note: 'x' },
      { traceparent: `00-${'0'.repeat(32)}-${hexId(8)}-01` },
    );
    expect(delivered.status).toBe(202);
    await acme.settledRun(delivered.body.runId);
    const server = await eventually(async () => {
      const found = collector.spans.find((span) => span.kind === SERVER && !before.has(span.traceId));
      expect(found).toBeDefined();
      expect(collector.trace(found!.traceId).filter((span) => span.kind === CLIENT)).toHaveLength(1);
      return found!;
    });
    expect(server.parentSpanId).toBe('');
  });
});

describe('traces of a run whose worker was killed', () => {
  let collector: OtlpReceiver;
  let sink: Receiver;
  let env: TestPlatform;
  const workers: ChildProcess[] = [];
  const otel = (url: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  });

  beforeAll(async () => {
    collector = await new OtlpReceiver().start();
    sink = await new Receiver().start();
    env = await startTestPlatform(
      'postgres',
      { api: true, worker: false },
      { workerLockMs: 2000, workerStalledIntervalMs: 1000 },
      [crash],
      otel(collector.url),
    );
  });
  afterAll(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await env?.close();
    await sink?.close();
    await collector?.close();
  });

  it('continues the trace in the worker that takes the run over, and never sends twice', async () => {
    const acme = await env.tenant('acme');
    await acme.call('PUT', '/api/v1/global-variables/SINK_URL', { value: sink.url });
    const marker = path.join(env.config.dataDir, 'crashed-once');
    await acme.publish({
      key: 'fragile',
      name: 'Fragile',
      trigger: { type: 'webhook' },
      nodes: [
        { id: 'forward', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.SINK_URL }}/erp' } },
        { id: 'boom', operation: 'test.crash', config: { onceMarker: marker } },
      ],
      edges: [
        { from: 'trigger', to: 'forward' },
        { from: 'forward', to: 'boom' },
      ],
    });
    // Worker processes configured by the environment alone, as `tributary worker` is.
    const startWorker = async () => {
      const { child, ready } = spawnWorker(
        env.config,
        { ...otel(collector.url), WORKER_LOCK_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' },
        ['--import', 'tsx', 'test/support/crashing-worker.ts'],
      );
      workers.push(child);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await ready;
      return { exited };
    };
    const first = await startWorker();
    const traceId = hexId(16);
    const delivered = await sendWebhook(
      env.url,
      'acme',
      'fragile',
      {},
      { traceparent: `00-${traceId}-${hexId(8)}-01` },
    );
    expect(delivered.status).toBe(202);
    await first.exited;
    await startWorker();
    expect((await acme.settledRun(delivered.body.runId)).status).toBe('succeeded');

    const spans = await eventually(async () => {
      const found = collector.trace(traceId);
      expect(found.some((span) => span.attributes['tributary.run.status'] === 'succeeded')).toBe(true);
      return found;
    });
    const send = spans.find((span) => span.kind === PRODUCER)!;
    const resumed = spans.find(
      (span) => span.kind === CONSUMER && span.attributes['tributary.run.status'] === 'succeeded',
    )!;
    expect(resumed).toMatchObject({ parentSpanId: send.spanId, links: [{ traceId, spanId: send.spanId }] });
    expect(resumed.attributes['tributary.run.attempt']).toBeGreaterThan(1);
    expect(resumed.resource['tributary.role']).toBe('worker');
    // The request was checkpointed before the crash: the run that goes on does not send it again (and `boom`, pure,
    // just succeeds: no span).
    expect(spans.filter((span) => span.parentSpanId === resumed.spanId)).toEqual([]);
    expect(sink.requests).toHaveLength(1);
    expect(parseTraceparent(sink.requests[0].headers.traceparent as string)?.traceId).toBe(traceId);
  });
});

describe('OTEL_* settings', () => {
  it('trace only when an OTLP endpoint or exporter is named, and not when the SDK is disabled', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x' })).toBeUndefined();
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }),
    ).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      url: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'tributary',
      sampler: { name: 'parentbased_always_on', ratio: 1 },
    });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })?.url).toBe('http://localhost:4318/v1/traces');
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/otlp/traces',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }),
    ).toMatchObject({ url: 'https://c/otlp/traces', protocol: 'http/json', sampler: { ratio: 0.25 } });
  });

  it('refuse what cannot be honoured, naming the variable', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        tracingSettings(env);
      } catch (error) {
        expect(error).toBeInstanceOf(TracingConfigError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(refusal({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
    expect(refusal({ OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/OTEL_TRACES_EXPORTER=zipkin/);
    expect(refusal({ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' })).toMatch(/OTEL_TRACES_SAMPLER=sometimes/);
    expect(refusal({ ...endpoint, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toMatch(
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toMatch(/not a URL/);
  });

  it('read a traceparent as W3C Trace Context says', () => {
    const id = 'a'.repeat(32);
    expect(parseTraceparent(`00-${id}-${'b'.repeat(16)}-01`)).toEqual({
      traceId: id,
      spanId: 'b'.repeat(16),
      sampled: true,
    });
    expect(parseTraceparent(`00-${id}-${'b'.repeat(16)}-00`)?.sampled).toBe(false);
    // A later version may add fields; version 00 may not, nor may ff be used.
    expect(parseTraceparent(`01-${id}-${'b'.repeat(16)}-01-more`)?.traceId).toBe(id);
    for (const invalid of [
      `00-${id}-${'b'.repeat(16)}-01-more`,
      `ff-${id}-${'b'.repeat(16)}-01`,
      `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
      `00-${id}-${'0'.repeat(16)}-01`,
      `00-${id.toUpperCase()}-${'b'.repeat(16)}-01`,
      'garbage',
      undefined,
    ])
      expect(parseTraceparent(invalid)).toBeUndefined();
  });
});
