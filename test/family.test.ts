import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defineFamily,
  defineOperation,
  type PublicRoute,
  RouteRefusal,
  type TenantRoute,
  type WebhookSubscriber,
} from '../engine/plugins/index.ts';
import { type ApiClient, sendWebhook, startTestPlatform, type TestPlatform } from './support/harness.ts';

/**
 * A vendor added as a family in a test (operations/ would hold it in a folder of its own): its operation, webhook
 * signature, destination type, subscriber and routes work through the API and the flow URL as Shopify's do, and
 * nothing in engine/, api/ or bin/ names it.
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

/** Acme's order flow, installed when a tenant asks for its key. */
const acmeOrders = {
  key: 'acme-orders',
  name: 'Acme orders',
  trigger: { type: 'webhook' as const, config: {} },
  nodes: [{ id: 'stamp', operation: 'acme.stamp', config: { orderId: '{{ $input.body.id }}' } }],
  edges: [{ from: 'trigger', to: 'stamp' }],
};

/** `POST /api/v1/acme-keys`: a tenant route of the family, its key kept as a secret. */
const acmeKeyRoute: TenantRoute = {
  access: 'tenant',
  method: 'post',
  path: '/api/v1/acme-keys',
  tag: 'Destination',
  scope: 'secrets:write',
  summary: 'Create the key Acme calls its order route with',
  description: 'Shown once.',
  responses: {
    201: {
      description: 'The key.',
      schema: { type: 'object', required: ['key'], properties: { key: { type: 'string' } } },
    },
  },
  async handle({ tenantId }, platform) {
    const key = `${tenantId}.acme-key-0123456789`;
    await platform.putSecret(tenantId, 'ACME_KEY', key);
    await platform.installedFlow(tenantId, acmeOrders);
    return { status: 201, body: { key } };
  },
};

/** `POST /api/acme/{shop}/orders`: Acme's own contract, authenticated by its key, answered with the run's output. */
const acmeOrderRoute: PublicRoute = {
  access: 'public',
  method: 'post',
  path: '/api/acme/{shop}/orders',
  tag: 'Destination',
  operationId: 'acmeOrder',
  summary: 'An Acme order, run through the tenant’s Acme flow',
  description: 'Authenticated by x-acme-key.',
  parameters: [
    { name: 'shop', in: 'path', required: true, schema: { type: 'string' } },
    { name: 'x-acme-key', in: 'header', required: true, schema: { type: 'string' } },
  ],
  body: 'An Acme order.',
  headers: { 'x-acme-contract': 'v1' },
  responses: {
    200: { description: 'The stamped order.', schema: { type: 'object' } },
    202: { description: 'Still running.', schema: { type: 'object' } },
    401: { description: 'No or a wrong key.' },
  },
  async handle(request, platform) {
    const key = request.header('x-acme-key') ?? '';
    const tenantId = key.split('.')[0];
    if (!(await platform.secretMatches(tenantId, 'ACME_KEY', key)))
      throw new RouteRefusal(401, 'Invalid key', 'x-acme-key is not an Acme key');
    const body = await platform.checkedJson(request.body, request.header('content-type'));
    const ids = await platform.deliver({
      tenantId,
      flowKey: acmeOrders.key,
      rawBody: request.body,
      body,
      headers: { 'content-type': 'application/json' },
      ownHeaders: { 'x-acme-shop': request.params.shop },
    });
    if (!ids) throw new RouteRefusal(404, 'No Acme flow', 'create a key first');
    const found = await platform.finishedRun(tenantId, ids.runId);
    const stamp = found?.steps.find((step) => step.key === 'stamp');
    return stamp ? { status: 200, body: stamp.output } : { status: 202, body: ids };
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
  routes: [acmeOrderRoute, acmeKeyRoute],
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

  it('serves its routes: a tenant route with its scope, a public one with its own key, both in /openapi.json', async () => {
    const openapi = await (await fetch(`${env.url}/openapi.json`)).json();
    expect(openapi.paths['/api/v1/acme-keys'].post.security).toEqual([{ oauth2: ['secrets:write'], tenant: [] }]);
    expect(openapi.paths['/api/acme/{shop}/orders'].post).toMatchObject({ operationId: 'acmeOrder', security: [] });
    const anonymous = await fetch(`${env.url}/api/v1/acme-keys`, {
      method: 'POST',
      headers: { tenant_id: 'acme-shop' },
    });
    expect(anonymous.status).toBe(401);
    const issued = await api.call('POST', '/api/v1/acme-keys');
    expect(issued.status).toBe(201);
    const order = (key: string, body: string) =>
      fetch(`${env.url}/api/acme/main/orders`, {
        method: 'POST',
        headers: { 'x-acme-key': key, 'content-type': 'application/json' },
        body,
      });
    const forged = await order('acme-shop.not-the-key-0123456', JSON.stringify({ id: 7 }));
    expect(forged.status).toBe(401);
    expect(forged.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(forged.headers.get('x-acme-contract')).toBe('v1');
    expect(await forged.json()).toMatchObject({
      type: '/docs#problem-unauthorized',
      detail: 'x-acme-key is not an Acme key',
    });
    // A body the platform refuses at a flow URL is refused here too, as a problem naming the field.
    const unpaired = await order(issued.body.key, '{"id": "\\ud800"}');
    expect(unpaired.status).toBe(400);
    expect((await unpaired.json()).errors[0].path).toMatch(/^\$\.body/);
    const stamped = await order(issued.body.key, JSON.stringify({ id: 7 }));
    expect(stamped.status).toBe(200);
    expect(stamped.headers.get('x-acme-contract')).toBe('v1');
    expect(await stamped.json()).toEqual({ stamped: 'acme-7' });
  });
});
