import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASKED, matchesRecorded } from '../engine/outbound/index.ts';
import { tributary } from './support/cli.ts';
import { Receiver } from './support/receiver.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Tests recorded from runs (decision 29): a run's requests and answers kept with its steps, replayed offline.
let env: TestPlatform;
let acme: ApiClient;
let erp: Receiver;
let dir: string;
const TOKEN = 'erp-token-5f3c9a1b';

/** orders-to-erp, sending the ERP's token from a secret. */
function ordersFlow() {
  const document = JSON.parse(readFileSync(path.join('flows', 'orders-to-erp.json'), 'utf8'));
  document.nodes[1].config.headers = { authorization: 'Bearer {{ $secrets.ERP_TOKEN }}' };
  return document;
}

const cli = (...args: string[]) => tributary(acme, ...args);
const testFiles = () => readdirSync(dir).filter((name) => name.endsWith('.test.json'));

describe('tests recorded from runs, on PostgreSQL', () => {
  let runId: string;

  beforeAll(async () => {
    erp = await new Receiver().start();
    env = await startTestPlatform('postgres');
    acme = await env.tenant('acme');
    await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: TOKEN });
    await acme.publish(ordersFlow());
    dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-tests-'));
    runId = (await sendWebhook(env.url, 'acme', 'orders-to-erp', { id: 1001, total: 25.5 })).body.runId;
    expect((await acme.settledRun(runId)).status).toBe('succeeded');
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await erp?.close();
    await env?.close();
  });

  it('keeps each request a step sent and its answer, credentials and secrets masked', async () => {
    const run = (await acme.call('GET', `/api/v1/runs/${runId}`)).body;
    const send = run.steps.find((step: { key: string }) => step.key === 'send');
    expect(send.exchanges).toHaveLength(1);
    const [{ request, response }] = send.exchanges;
    expect(request).toMatchObject({ method: 'POST', url: `${erp.url}/orders`, body: '{"id":1001,"total":25.5}' });
    expect(request.headers.authorization).toBe('[REDACTED]');
    expect(response).toMatchObject({ status: 200, body: '{"received":{"id":1001,"total":25.5}}' });
    expect(JSON.stringify(run)).not.toContain(TOKEN);
    // A node that sends nothing keeps none.
    expect(run.steps.find((step: { key: string }) => step.key === 'map').exchanges).toBeUndefined();
  });

  it('records a run as a test that passes offline, and fails naming the step and the difference after a change', async () => {
    const captured = await cli('test', 'capture', runId, '--dir', dir);
    expect(captured.code, captured.out).toBe(0);
    expect(captured.out).toContain('1 request, run succeeded');
    const [file] = testFiles();
    const recorded = readFileSync(path.join(dir, file), 'utf8');
    expect(recorded).not.toContain(TOKEN);
    expect(JSON.parse(recorded)).toMatchObject({
      flow: 'orders-to-erp',
      message: { body: { id: 1001, total: 25.5 } },
      expect: { status: 'succeeded', steps: { map: { status: 'succeeded', output: { id: 1001, total: 25.5 } } } },
    });

    // The ERP is gone: the test needs nothing outside.
    await erp.close();
    const sentBefore = erp.requests.length;
    const passed = await cli('test', '--dir', dir);
    expect(passed.code, passed.out).toBe(0);
    expect(passed.out).toContain(`PASS  ${file}`);
    expect(passed.out).toContain('tests: 1 passed, 0 failed');

    // The transform changes, in a file beside the test (as `flows pull` writes it): the test fails, naming both
    // the step whose output differs and the request the recording does not have.
    const changed = ordersFlow();
    changed.nodes[0].config.expression = "{{ {'id': $input.body.id, 'total': $string($input.body.total)} }}";
    writeFileSync(path.join(dir, 'orders-to-erp.flow.json'), JSON.stringify(changed));
    const failed = await cli('test', '--dir', dir);
    expect(failed.code, failed.out).toBe(1);
    expect(failed.out).toContain(`FAIL  ${file}`);
    expect(failed.out).toContain('map: its output differs');
    expect(failed.out).toContain('~ $.total: 25.5 -> "25.5"');
    expect(failed.out).toMatch(
      /send: succeeded when recorded, failed now: POST http:\/\/127\.0\.0\.1:\d+\/orders is not in the recording/,
    );
    // The recorded request, sent now with another body, is named once: at its step.
    expect(failed.out).not.toContain('recorded, and not sent now');
    expect(failed.out).toContain('tests: 0 passed, 1 failed');
    expect(erp.requests.length).toBe(sentBefore);
    rmSync(path.join(dir, 'orders-to-erp.flow.json'));
  });

  it('lets a person edit a test: another message, a field marked volatile', async () => {
    const [file] = testFiles();
    const fixture = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    fixture.message.body.total = 30;
    fixture.expect.steps.map.output.total = 30;
    writeFileSync(path.join(dir, file), JSON.stringify(fixture, null, 2));
    // The recorded request had total 25.5: the one sent now is not in the recording.
    const unrecorded = await cli('test', '--dir', dir);
    expect(unrecorded.code).toBe(1);
    expect(unrecorded.out).toContain('is not in the recording');

    // The recording answered as the ERP did (total 25.5); the person expects what the ERP would echo now.
    const edited = {
      ...fixture,
      exchanges: fixture.exchanges.map((exchange: { request: { body: string } }) => ({
        ...exchange,
        request: { ...exchange.request, body: '{"id":1001,"total":30}' },
      })),
    };
    edited.expect.steps.send.output.body.received.total = 30;
    const differs = await acme.call('POST', '/api/v1/fixtures/run', { fixture: edited });
    expect(differs.body.differences).toEqual([
      { step: 'send', message: 'its output differs', diff: ['~ $.body.received.total: 30 -> 25.5'] },
    ]);
    const { body } = await acme.call('POST', '/api/v1/fixtures/run', {
      fixture: { ...edited, volatile: { send: ['$.body.received'] } },
    });
    expect(body.differences).toEqual([]);
    expect(body.passed).toBe(true);
  });
});

describe('a recorded request', () => {
  it('matches what was masked in it with anything, and the rest only with itself', () => {
    const recorded = `https://erp.example/orders?token=${MASKED}&shop=${MASKED}.myshopify.com`;
    expect(matchesRecorded(recorded, 'https://erp.example/orders?token=abc&shop=acme.myshopify.com')).toBe(true);
    expect(matchesRecorded(recorded, 'https://erp.example/orders?token=abc&shop=acme.example.com')).toBe(false);
    expect(matchesRecorded(recorded, 'https://erp.example/refunds?token=abc&shop=acme.myshopify.com')).toBe(false);
    expect(matchesRecorded('{"a":1}', '{"a":1}')).toBe(true);
    expect(matchesRecorded(`x${MASKED}x`, 'x')).toBe(false);
    // A recording written to make a pattern backtrack is looked through once.
    const hostile = `${`a${MASKED}`.repeat(5000)}b`;
    expect(matchesRecorded(hostile, 'a'.repeat(100_000))).toBe(false);
  });
});

describe('steps on a deployment that keeps no exchanges (RECORD_EXCHANGES=none), on PGlite', () => {
  it('keep none', async () => {
    const receiver = await new Receiver().start();
    const lean = await startTestPlatform('pglite', undefined, { recordExchanges: 'none' });
    try {
      const tenant = await lean.tenant('lean');
      await tenant.call('PUT', '/api/v1/global-variables/ERP_URL', { value: receiver.url });
      await tenant.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: TOKEN });
      await tenant.publish(ordersFlow());
      const { runId } = (await sendWebhook(lean.url, 'lean', 'orders-to-erp', { id: 1 })).body;
      const run = await tenant.settledRun(runId);
      expect(run.status).toBe('succeeded');
      expect(receiver.requests).toHaveLength(1);
      expect(run.steps.map((step: { exchanges?: unknown }) => step.exchanges)).toEqual([undefined, undefined]);
    } finally {
      await lean.close();
      await receiver.close();
    }
  });
});
