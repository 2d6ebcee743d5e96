import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFamily, defineOperation, type WebhookSubscriber } from '../engine/plugins/index.ts';
import { type ApiClient, sendWebhook, startTestPlatform, type TestPlatform } from './support/harness.ts';

/**
 * A vendor added as a family in a test (operations/ would hold it in a folder of its own): its operation, webhook
 * signature, destination type and subscriber work through the API and the flow URL as Shopify's do, and nothing in
 * engine/, api/ or bin/ names it.
 */
const SECRET = 'acme-signing-secret-0123456789';
const subscribed: Array<{ uri: string; topic: string; endpoint: unknown }> = [];

const acmeSubscriber: WebhookSubscriber = {
  topics: ['orders/paid'],
  apiVersions: ['v1'],
  async subscribe(destination, { uri, topic }) {
    subscribed.push({ uri, topic, endpoint: destination.settings.endpoint });
    return { id: `sub-${subscribed.length}`, topic, uri, apiVersion: 'v1' };
  },
};

/** Acme's destination: an endpoint, and the token it is called with (sealed). */
const acmeDestinationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'endpoint', 'token'],
  properties: {
    type: { const: 'acme' },
    endpoint: { type: 'string', pattern: '^https://' },
    token: { type: 'string', minLength: 16, writeOnly: true },
  },
};

const acmeFamily = defineFamily({
  name: 'acme',
  operations: [
    defineOperation({
      name: 'acme.stamp',
      title: 'Stamp an Acme order',
      description: 'Answers the order id it was given, stamped.',
      version: '1.0.0',
      sideEffects: false,
      configSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['orderId'],
        properties: { orderId: { type: 'integer' } },
      },
      run: async ({ config }) => ({ stamped: `acme-${(config as { orderId: number }).orderId}` }),
    }),
  ],
  webhookSignature: {
    type: 'acme',
    description: 'Acme: HMAC-SHA256 of the raw body, hex, in X-Acme-Signature.',
    header: 'x-acme-signature',
    encoding: 'hex',
    deliveryIdHeader: 'x-acme-delivery',
    topicHeader: 'x-acme-topic',
  },
  destination: {
    type: {
      type: 'acme',
      schema: acmeDestinationSchema,
      errors: () => [],
      addresses: () => [],
      split: ({ type, endpoint, token }) => ({
        settings: { type, endpoint },
        credentials: { token },
        credentialsSet: token === undefined ? [] : ['$.token'],
      }),
    },
    subscriber: acmeSubscriber,
  },
});

describe('a vendor added as a family', () => {
  let env: TestPlatform;
  let api: ApiClient;
  beforeAll(async () => {
    env = await startTestPlatform('pglite', { api: true, worker: true }, {}, [acmeFamily]);
    api = await env.tenant('acme-shop');
  });
  afterAll(() => env?.close());

  it('keeps its destination, credentials sealed, and subscribes a flow URL through its subscriber', async () => {
    const put = await api.call('PUT', '/api/v1/destinations/acme-main', {
      type: 'acme',
      endpoint: 'https://acme.example/api/',
      token: 'acme-token-0123456789',
    });
    expect(put.status).toBe(201);
    expect(put.text).not.toContain('acme-token-0123456789');
    const refused = await api.call('PUT', '/api/v1/destinations/acme-bad', { type: 'acme', endpoint: 'ftp://x' });
    expect(refused.status).toBe(400);
    const flowId = await api.publish({
      key: 'paid',
      name: 'paid',
      trigger: { type: 'webhook', config: {} },
      nodes: [{ id: 'stamp', operation: 'acme.stamp', config: { orderId: 1 } }],
      edges: [{ from: 'trigger', to: 'stamp' }],
    });
    const subscription = await api.call('POST', '/api/v1/destinations/acme-main/webhooks', {
      flowId,
      topic: 'orders/paid',
    });
    expect(subscription.status).toBe(201);
    expect(subscribed).toEqual([
      {
        uri: expect.stringMatching(/\/hooks\/acme-shop\/paid$/),
        topic: 'orders/paid',
        endpoint: 'https://acme.example/api/',
      },
    ]);
  });

  it('verifies its signature at a flow URL, and runs its operation', async () => {
    expect((await api.call('PUT', '/api/v1/secret-global-variables/ACME_SECRET', { value: SECRET })).status).toBe(201);
    await api.publish({
      key: 'signed',
      name: 'signed',
      trigger: { type: 'webhook', config: { verify: { type: 'acme', secret: 'ACME_SECRET', topic: 'orders/paid' } } },
      nodes: [{ id: 'stamp', operation: 'acme.stamp', config: { orderId: '{{ $input.body.id }}' } }],
      edges: [{ from: 'trigger', to: 'stamp' }],
    });
    const body = JSON.stringify({ id: 42 });
    const signed = (key: string) => createHmac('sha256', key).update(body).digest('hex');
    const headers = { 'x-acme-topic': 'orders/paid', 'x-acme-delivery': 'd-1' };
    const forged = await sendWebhook(env.url, 'acme-shop', 'signed', body, {
      ...headers,
      'x-acme-signature': signed('not-the-secret-0123456789'),
    });
    expect(forged.status).toBe(401);
    const accepted = await sendWebhook(env.url, 'acme-shop', 'signed', body, {
      ...headers,
      'x-acme-signature': signed(SECRET),
    });
    expect(accepted.status).toBe(202);
    const run = await api.settledRun(accepted.body.runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps.find((step: { nodeId: string }) => step.nodeId === 'stamp').output).toEqual({
      stamped: 'acme-42',
    });
  });
});
