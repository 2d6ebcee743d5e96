import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiClient,
  eventually,
  getToken,
  sendWebhook,
  spawnWorker,
  startSiblingApi,
  startTestPlatform,
  type TestPlatform,
} from './support/harness.ts';
import { type ReceivedRequest, Receiver } from './support/receiver.ts';

const SECRET = 'erp-token-never-in-an-alert';
const BODY_MARK = 'customer-address-never-in-an-alert';

/** Posts to the ERP, which refuses (422: a permanent failure) while `erpRefuses`. */
const refundFlow = (key: string) => ({
  key,
  name: key,
  trigger: { type: 'webhook', config: {} },
  nodes: [
    {
      id: 'post',
      operation: 'http.request',
      config: {
        method: 'POST',
        url: '{{ $vars.ERP_URL }}/refunds',
        headers: { authorization: 'Bearer {{ $secrets.ERP_TOKEN }}' },
        body: '{{ $input.body }}',
      },
      retry: { maxAttempts: 1 },
    },
  ],
  edges: [{ from: 'trigger', to: 'post' }],
});

/** What a Standard Webhooks receiver checks: the signature over id, timestamp and body, with the secret's bytes. */
function verifies(request: ReceivedRequest, secret: string): boolean {
  const id = request.headers['webhook-id'];
  const timestamp = request.headers['webhook-timestamp'];
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${request.body}`).digest('base64');
  return String(request.headers['webhook-signature'])
    .split(' ')
    .some((signature) => signature === `v1,${expected}`);
}

const ALERTS = { alertCheckIntervalMs: 200, alertTimeoutMs: 2000 };

describe.each(['pglite', 'postgres'] as const)('alerts to the tenant on %s', (store) => {
  let env: TestPlatform;
  let acme: ApiClient;
  const erpRefuses = true;
  let erp: Receiver;
  let hook: Receiver;
  let slack: Receiver;
  let secret: string;
  let channelIds: string[];

  const failRuns = async (key: string, n: number) => {
    const runs = [];
    for (let i = 0; i < n; i++) {
      const delivered = await sendWebhook(env.url, 'acme', key, { order: i, address: BODY_MARK });
      expect(delivered.status).toBe(202);
      runs.push(delivered.body.runId);
    }
    for (const runId of runs) expect((await acme.settledRun(runId)).status).toBe('failed');
    return runs;
  };
  /** Waits until every rule was checked after what just happened had settled (a failure counts once 2 s old). */
  const checkedSince = async (since: number) =>
    eventually(async () => {
      const rules = (await acme.call('GET', '/api/v1/alert-rules')).body.nodes;
      for (const rule of rules.filter((candidate: any) => candidate.enabled))
        expect(Date.parse(rule.checkedAt)).toBeGreaterThan(since + 2500);
    });
  const alerts = async () => (await acme.call('GET', '/api/v1/alerts')).body.nodes;

  beforeAll(async () => {
    erp = await new Receiver(() =>
      erpRefuses ? { status: 422, body: { error: 'closed period' } } : undefined,
    ).start();
    hook = await new Receiver().start();
    slack = await new Receiver().start();
    env = await startTestPlatform(store, undefined, ALERTS);
    acme = await env.tenant('acme');
    await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: SECRET });
  });
  afterAll(async () => {
    await env?.close();
    for (const receiver of [erp, hook, slack]) await receiver?.close();
  });

  it('keeps channels: a webhook with a signing secret shown once, a Slack URL never shown again', async () => {
    const webhook = await acme.call('POST', '/api/v1/alert-channels', {
      name: 'on-call',
      type: 'webhook',
      url: `${hook.url}/alerts?token=query-token-never-shown`,
    });
    expect(webhook.status).toBe(201);
    expect(webhook.body).toMatchObject({
      type: 'webhook',
      url: `${hook.url}/alerts?…`,
      secret: expect.stringMatching(/^whsec_/),
    });
    secret = webhook.body.secret;
    const chat = await acme.call('POST', '/api/v1/alert-channels', {
      name: 'chat',
      type: 'slack',
      url: `${slack.url}/services/T000/B000/XXXXSECRETPATH`,
    });
    expect(chat.status).toBe(201);
    expect(chat.body.url).toBe(`${slack.url}/…`);
    expect(chat.body.secret).toBeUndefined();
    channelIds = [webhook.body.id, chat.body.id];
    // A test alert goes out at once, signed, and says how it was answered.
    const tested = await acme.call('POST', `/api/v1/alert-channels/${webhook.body.id}/test`);
    expect(tested.body).toEqual({ sent: true, status: 200 });
    const [test] = hook.requests.splice(0);
    expect(verifies(test, secret)).toBe(true);
    expect(JSON.parse(test.body)).toMatchObject({ type: 'alert.test', tenantId: 'acme', rule: null, runUrl: null });
    expect((await acme.call('POST', `/api/v1/alert-channels/${chat.body.id}/test`)).body).toEqual({
      sent: true,
      status: 200,
    });
    expect(JSON.parse(slack.requests.splice(0)[0].body)).toEqual({
      text: '[test] a test alert from Tributary: this channel works',
    });
    const wrong = await acme.call('POST', '/api/v1/alert-channels', { name: 'wrong', type: 'webhook', url: erp.url });
    expect((await acme.call('POST', `/api/v1/alert-channels/${wrong.body.id}/test`)).body).toEqual({
      sent: false,
      error: 'answered 422',
    });
    expect((await acme.call('DELETE', `/api/v1/alert-channels/${wrong.body.id}`)).status).toBe(204);
    const listed = await acme.call('GET', '/api/v1/alert-channels');
    expect(listed.text).not.toContain('XXXXSECRETPATH');
    expect(listed.text).not.toContain('query-token-never-shown');
    expect(listed.text).not.toContain(secret);
    // Another tenant sees none of them, and cannot point a rule at them.
    const other = await env.tenant('other-alerts');
    expect((await other.call('GET', '/api/v1/alert-channels')).body.nodes).toEqual([]);
    const stolen = await other.call('POST', '/api/v1/alert-rules', {
      name: 'x',
      channelIds,
      condition: { kind: 'run-failed', flowIds: [await acme.publish(refundFlow('not-theirs'))] },
    });
    expect(stolen.status).toBe(404);
    expect(stolen.body.errors.map((error: any) => error.path)).toEqual([
      '$.body.channelIds[0]',
      '$.body.channelIds[1]',
      '$.body.condition.flowIds[0]',
    ]);
    const bad = await acme.call('POST', '/api/v1/alert-rules', {
      name: 'x',
      channelIds,
      condition: { kind: 'failure-rate', failures: 1 },
    });
    expect(bad.status).toBe(400);
  });

  it('sends one signed alert, and one Slack line with a link to the run, when a run fails', async () => {
    await acme.publish(refundFlow('refunds'));
    const rule = await acme.call('POST', '/api/v1/alert-rules', {
      name: 'refunds failing',
      channelIds,
      condition: { kind: 'run-failed' },
      cooldownSeconds: 0,
    });
    expect(rule.status).toBe(201);
    const [runId] = await failRuns('refunds', 1);
    const [alert] = await eventually(async () => {
      expect(hook.requests).toHaveLength(1);
      expect(slack.requests).toHaveLength(1);
      return hook.requests;
    });
    // Kept for a person to read: what an on-call endpoint receives.
    mkdirSync(path.join(os.tmpdir(), 'tributary-alerts'), { recursive: true });
    writeFileSync(
      path.join(os.tmpdir(), 'tributary-alerts', `${store}.json`),
      JSON.stringify(
        { headers: alert.headers, body: JSON.parse(alert.body), slack: JSON.parse(slack.requests[0].body) },
        null,
        2,
      ),
    );
    expect(verifies(alert, secret)).toBe(true);
    expect(verifies(alert, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).toBe(false);
    const body = JSON.parse(alert.body);
    expect(body).toMatchObject({
      id: alert.headers['webhook-id'],
      type: 'alert.run-failed',
      tenantId: 'acme',
      rule: { id: rule.body.id, name: 'refunds failing' },
      count: 1,
      text: '[refunds failing] 1 run of refunds failed (latest: permanent in post)',
      sample: { runId, flowKey: 'refunds', errorKind: 'permanent', node: 'post' },
    });
    // The link opens the run's page, read-only, without signing in.
    const page = await fetch(body.runUrl);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(runId);
    expect(html).not.toContain('Replay this message');
    expect(JSON.parse(slack.requests[0].body)).toEqual({
      text: `[refunds failing] 1 run of refunds failed (latest: permanent in post) <${body.runUrl}|Open the run>`,
    });
    for (const request of [...hook.requests, ...slack.requests]) {
      expect(request.body).not.toContain(SECRET);
      expect(request.body).not.toContain(BODY_MARK);
    }
    const [recorded] = await alerts();
    expect(recorded.deliveries.map((delivery: any) => delivery.status)).toEqual(['sent', 'sent']);
    await acme.call('DELETE', `/api/v1/alert-rules/${rule.body.id}`);
    // Past the retention, an alert that is no longer being sent is pruned.
    expect(await env.platform.store.pruneAlerts(recorded.createdAt)).toBe(0);
    expect(await env.platform.store.pruneAlerts(new Date(Date.now() + 1000).toISOString())).toBe(1);
    expect(await alerts()).toEqual([]);
  });

  it('counts a flood into one alert per cooldown, and reports each failure once', async () => {
    await acme.publish(refundFlow('invoices'));
    const rule = await acme.call('POST', '/api/v1/alert-rules', {
      name: 'invoices failing',
      channelIds: [channelIds[0]],
      condition: { kind: 'run-failed' },
      cooldownSeconds: 3600,
    });
    hook.requests.length = 0;
    await failRuns('invoices', 1);
    await eventually(async () => expect(hook.requests).toHaveLength(1));
    // Within the cooldown, five more failures send nothing...
    await failRuns('invoices', 5);
    await checkedSince(Date.now());
    expect(hook.requests).toHaveLength(1);
    // ...and are reported together, once, after it.
    await acme.call('PUT', `/api/v1/alert-rules/${rule.body.id}`, {
      name: 'invoices failing',
      channelIds: [channelIds[0]],
      condition: { kind: 'run-failed' },
      cooldownSeconds: 0,
    });
    await eventually(async () => expect(hook.requests).toHaveLength(2));
    expect(JSON.parse(hook.requests[1].body)).toMatchObject({ count: 5 });
    await checkedSince(Date.now());
    expect(hook.requests).toHaveLength(2);
    await acme.call('DELETE', `/api/v1/alert-rules/${rule.body.id}`);
  });

  it('counts handled runs only for a rule that asks for them', async () => {
    const refunds = refundFlow('credit-notes');
    // Its error path takes the ERP's refusal: the runs end handled.
    await acme.publish({
      ...refunds,
      nodes: [
        ...refunds.nodes,
        { id: 'note', operation: 'transform', config: { expression: '{{ $failure.message }}' } },
      ],
      edges: [...refunds.edges, { from: 'post', to: 'note', on: 'error' }],
    });
    const flowId = (await acme.call('GET', '/api/v1/flows?first=100')).body.nodes.find(
      (flow: any) => flow.key === 'credit-notes',
    ).id;
    const rules = [];
    for (const includeHandled of [false, true])
      rules.push(
        await acme.call('POST', '/api/v1/alert-rules', {
          name: `credit notes, handled ${includeHandled}`,
          channelIds: [channelIds[0]],
          condition: { kind: 'run-failed', flowIds: [flowId], includeHandled },
        }),
      );
    hook.requests.length = 0;
    const delivered = await sendWebhook(env.url, 'acme', 'credit-notes', { order: 'cn-1' });
    expect((await acme.settledRun(delivered.body.runId)).status).toBe('handled');
    await eventually(async () => expect(hook.requests).toHaveLength(1));
    await checkedSince(Date.now());
    expect(hook.requests.map((request) => JSON.parse(request.body).text)).toEqual([
      '[credit notes, handled true] 1 run of credit-notes failed or handled (latest: permanent in post)',
    ]);
    for (const rule of rules) await acme.call('DELETE', `/api/v1/alert-rules/${rule.body.id}`);
  });

  it('alerts when a flow fails N times within its window, and when a message is held too long', async () => {
    await acme.publish(refundFlow('credits'));
    const flowId = (await acme.call('GET', '/api/v1/flows?first=100')).body.nodes.find(
      (flow: any) => flow.key === 'credits',
    ).id;
    await acme.call('POST', '/api/v1/alert-rules', {
      name: 'credits keep failing',
      channelIds: [channelIds[0]],
      condition: { kind: 'failure-rate', flowIds: [flowId], failures: 3, windowSeconds: 600 },
    });
    hook.requests.length = 0;
    await failRuns('credits', 2);
    await checkedSince(Date.now());
    expect(hook.requests).toHaveLength(0);
    await failRuns('credits', 1);
    await eventually(async () => expect(hook.requests).toHaveLength(1));
    expect(JSON.parse(hook.requests[0].body)).toMatchObject({ type: 'alert.failure-rate', count: 3 });

    await acme.call('POST', '/api/v1/alert-rules', {
      name: 'held',
      channelIds: [channelIds[0]],
      condition: { kind: 'message-held', olderThanSeconds: 1 },
    });
    expect((await acme.call('PUT', '/api/v1/blocked-topics/refunds%2Fcreate', {})).status).toBeLessThan(300);
    const held = await sendWebhook(env.url, 'acme', 'credits', { order: 'held' }, { 'x-topic': 'refunds/create' });
    expect(held.status).toBe(202);
    await eventually(async () => expect(hook.requests).toHaveLength(2));
    expect(JSON.parse(hook.requests[1].body)).toMatchObject({
      type: 'alert.message-held',
      count: 1,
      text: '[held] 1 message has been held for over 1 s',
      sample: { runId: held.body.runId, flowKey: 'credits' },
    });
  });
});

describe('an alert whose worker dies while sending it', () => {
  let env: TestPlatform;
  let hook: Receiver;
  const workers: ChildProcess[] = [];

  beforeAll(async () => {
    hook = await new Receiver().start();
    env = await startTestPlatform('postgres', { api: true, worker: false }, ALERTS);
  });
  afterAll(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await env?.close();
    await hook?.close();
  });

  it('refuses a channel URL the address policy refuses', async () => {
    const refusing = await startSiblingApi(env, { outboundPrivateAddresses: 'refuse' });
    try {
      const policy = await env.tenant('policy');
      const token = await getToken(refusing.url, policy.credentials.client_id, policy.credentials.client_secret);
      const answer = await new ApiClient(refusing.url, token, 'policy', policy.credentials).call(
        'POST',
        '/api/v1/alert-channels',
        {
          name: 'metadata',
          type: 'webhook',
          url: 'http://169.254.169.254/latest',
        },
      );
      expect(answer.status).toBe(400);
      expect(answer.body.errors).toEqual([
        { path: '$.body.url', message: expect.stringContaining('OUTBOUND_PRIVATE_ADDRESSES') },
      ]);
    } finally {
      await refusing.close();
    }
  });

  it('arrives again after the lease, with the same webhook-id: a receiver that keeps ids gets it once', async () => {
    const acme = await env.tenant('acme');
    const erp = await new Receiver(() => ({ status: 422 })).start();
    await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: SECRET });
    await acme.publish(refundFlow('refunds'));
    const channel = await acme.call('POST', '/api/v1/alert-channels', {
      name: 'on-call',
      type: 'webhook',
      url: hook.url,
    });
    await acme.call('POST', '/api/v1/alert-rules', {
      name: 'refunds failing',
      channelIds: [channel.body.id],
      condition: { kind: 'run-failed' },
    });
    // The receiver holds the first alert without answering; its worker is killed meanwhile.
    hook.script('hang');
    const start = () => {
      const { child, ready } = spawnWorker(env.config, { ALERT_CHECK_INTERVAL_MS: '200', ALERT_TIMEOUT_MS: '2000' });
      workers.push(child);
      return { child, ready, exited: new Promise((resolve) => child.once('exit', resolve)) };
    };
    const first = start();
    await first.ready;
    const delivered = await sendWebhook(env.url, 'acme', 'refunds', { order: 1 });
    expect((await acme.settledRun(delivered.body.runId)).status).toBe('failed');
    await eventually(async () => expect(hook.requests).toHaveLength(1));
    first.child.kill('SIGKILL');
    await first.exited;
    await start().ready;
    await eventually(async () =>
      expect(hook.requests.filter((request) => request.reply?.status === 200)).toHaveLength(1),
    );
    const ids = hook.requests.map((request) => request.headers['webhook-id']);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(1);
    const [alert] = (await acme.call('GET', '/api/v1/alerts')).body.nodes;
    expect(alert.deliveries).toEqual([
      { channelId: channel.body.id, status: 'sent', attempts: 2, lastError: null, sentAt: expect.any(String) },
    ]);
    await erp.close();
  });
});

describe("one tenant's flood of alerts", () => {
  let env: TestPlatform;
  let erp: Receiver;
  let hanging: Receiver;
  let quick: Receiver;

  beforeAll(async () => {
    erp = await new Receiver(() => ({ status: 422, body: { error: 'closed period' } })).start();
    hanging = await new Receiver(() => 'hang').start();
    quick = await new Receiver().start();
    env = await startTestPlatform('postgres', undefined, ALERTS);
  });
  afterAll(async () => {
    await env?.close();
    for (const receiver of [erp, hanging, quick]) await receiver?.close();
  });

  /** A tenant whose every failed run alerts `rules` rules, each on the same `channels` webhooks at `url`. */
  const tenantAlerting = async (id: string, url: string, rules: number, channels: number) => {
    const client = await env.tenant(id);
    await client.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
    await client.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: SECRET });
    await client.publish(refundFlow('refunds'));
    const channelIds: string[] = [];
    for (let n = 0; n < channels; n++) {
      const channel = await client.call('POST', '/api/v1/alert-channels', { name: `c${n}`, type: 'webhook', url });
      channelIds.push(channel.body.id);
    }
    for (let n = 0; n < rules; n++) {
      await client.call('POST', '/api/v1/alert-rules', {
        name: `r${n}`,
        channelIds,
        condition: { kind: 'run-failed' },
        cooldownSeconds: 0,
      });
    }
    return client;
  };

  it("never holds up another tenant's alert behind its own, sent to a receiver that hangs", async () => {
    const noisy = await tenantAlerting('noisy', `${hanging.url}/alerts`, 12, 5);
    const quiet = await tenantAlerting('quiet', `${quick.url}/alerts`, 1, 1);
    const failed = await sendWebhook(env.url, 'noisy', 'refunds', { order: 1 });
    expect((await noisy.settledRun(failed.body.runId)).status).toBe('failed');
    // 60 deliveries (12 rules x 5 channels) are due; a look sends 20, each held until ALERT_TIMEOUT_MS.
    await eventually(async () => expect(hanging.requests.length).toBeGreaterThan(0));
    const other = await sendWebhook(env.url, 'quiet', 'refunds', { order: 2 });
    expect((await quiet.settledRun(other.body.runId)).status).toBe('failed');
    await eventually(async () => expect(quick.requests).toHaveLength(1));
    // In turn by tenant, the quiet tenant's alert went with the next look, not after the noisy tenant's 60.
    expect(hanging.requests.length).toBeLessThanOrEqual(40);
  });
});
