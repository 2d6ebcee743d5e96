import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyring } from '../engine/secrets/keyring.ts';
import { createClientCredentials } from '../api/auth/clients.ts';
import { apiTags } from '../api/route-kit/route.ts';
import { flowDocumentSchema } from '../engine/model/flow-document.ts';
import { runSchema, runStatuses } from '../engine/model/resources.ts';
import example from '../flows/orders-to-erp.json' with { type: 'json' };
import {
  getToken,
  sendWebhook,
  startSiblingApi,
  startTestPlatform,
  type ApiClient,
  type TestPlatform,
} from './support/harness.ts';
import { OpenApiContract } from './support/openapi-contract.ts';

let env: TestPlatform;
let a: ApiClient;
let b: ApiClient;
let flowA: string;

beforeAll(async () => {
  env = await startTestPlatform('postgres', { api: true, worker: true }, { bodyLimitBytes: 64 * 1024 });
  a = await env.tenant('tenant-a');
  b = await env.tenant('tenant-b');
  flowA = await a.publish(example);
  await a.call('PUT', '/api/v1/global-variables/ERP_URL', { value: 'http://127.0.0.1:9' });
  await a.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: 'tok-a-very-secret' });
});
afterAll(() => env?.close());

/** Every /api route of the OpenAPI document, with its path parameters filled for tenant A's data. */
async function apiOperations() {
  const document = await (await fetch(`${env.url}/openapi.json`)).json();
  const operations: Array<{ method: string; path: string; scope: string; operator: boolean }> = [];
  for (const [path, methods] of Object.entries<any>(document.paths)) {
    if (!path.startsWith('/api/')) continue;
    for (const [method, operation] of Object.entries<any>(methods)) {
      // The deprecated adapter route has its own key (x-api-key), tested with the refund operation.
      if (operation.security.length === 0) continue;
      const filled = path
        .replace('{id}', flowA)
        .replace('{name}', 'ERP_URL')
        .replace('{version}', '1')
        .replace('{tenantId}', 'tenant-a')
        .replace('{topic}', 'refunds%2Fcreate');
      const scope = operation.security[0].oauth2[0];
      operations.push({ method: method.toUpperCase(), path: filled, scope, operator: scope === 'platform:admin' });
    }
  }
  return operations;
}

const bodyFor = (method: string, path: string) =>
  method === 'GET' || method === 'DELETE'
    ? undefined
    : path.endsWith('/editable-flows')
      ? example
      : path.includes('/editable-flows/') && method === 'PUT'
        ? { revision: 1, document: example }
        : path.includes('variables/')
          ? { value: 'x' }
          : {};

/** Routes that change only the calling client's own settings: any token of the tenant may. */
const OWN_SETTINGS = new Set(['PUT /api/v1/user-settings']);

/** The problem type each refusal of a flow URL is: its kind in the catalog, by its URI in /docs. */
const REFUSAL_TYPES: Record<number, string> = {
  400: '/docs#problem-invalid-request',
  413: '/docs#problem-too-large',
  415: '/docs#problem-unsupported-media-type',
};

describe('authentication and authorization on every route', () => {
  it('answers 401 without a token, 401 with a bad one, 400 without tenant_id, 403 for another tenant', async () => {
    const operations = (await apiOperations()).filter((operation) => !operation.operator);
    expect(operations.length).toBeGreaterThanOrEqual(17);
    for (const { method, path } of operations) {
      const body = bodyFor(method, path);
      const noToken = await fetch(`${env.url}${path}`, {
        method,
        headers: { tenant_id: 'tenant-a', 'content-type': 'application/json' },
        body: body && JSON.stringify(body),
      });
      expect(noToken.status, `${method} ${path} without token`).toBe(401);
      expect(noToken.headers.get('content-type')).toMatch(/application\/problem\+json/);
      const forged = await fetch(`${env.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${a.token.slice(0, -4)}AAAA`, tenant_id: 'tenant-a' },
      });
      expect(forged.status, `${method} ${path} with a forged token`).toBe(401);
      const noTenant = await a.call(method, path, body, { tenant_id: '' });
      expect(noTenant.status, `${method} ${path} without tenant_id`).toBe(400);
      const otherTenant = await b.as('tenant-a').call(method, path, body);
      expect(otherTenant.status, `${method} ${path} as tenant B`).toBe(403);
    }
  });

  it("answers 403 when the token lacks the route's scope", async () => {
    const credentials = await createClientCredentials(env.platform.store, {
      tenantId: 'tenant-a',
      scopes: ['runs:read'],
    });
    const reader = await getToken(env.url, credentials.client_id, credentials.client_secret);
    for (const { method, path, scope } of await apiOperations()) {
      // Only a read, or a write of the caller's own settings, may go without a scope (every token of the tenant may
      // make it): a route that changes the tenant's data and lost its scope fails here.
      if (scope === undefined && !OWN_SETTINGS.has(`${method} ${path}`))
        expect(method, `${method} ${path} changes something without a scope`).toBe('GET');
      if (scope === 'runs:read' || scope === undefined) continue;
      const response = await fetch(`${env.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${reader}`, tenant_id: 'tenant-a' },
      });
      expect(response.status, `${method} ${path} needs ${scope}`).toBe(403);
    }
  });

  it('answers operator routes only to operator tokens, without a tenant_id header', async () => {
    const operations = (await apiOperations()).filter((operation) => operation.operator);
    expect(operations.map(({ method, path }) => `${method} ${path}`)).toEqual(
      expect.arrayContaining(['GET /api/v1/tenants', 'POST /api/v1/tenants/tenant-a/suspend']),
    );
    for (const { method, path } of operations) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      expect((await fetch(`${env.url}${path}`, { method })).status, `${method} ${path} without token`).toBe(401);
      expect((await a.call(method, path, body)).status, `${method} ${path} as a tenant`).toBe(403);
      expect((await b.as('tenant-a').call(method, path, body)).status, `${method} ${path} as another tenant`).toBe(403);
    }
    const operator = await env.operator();
    const tenantA = await operator.call('GET', '/api/v1/tenants/tenant-a', undefined, { tenant_id: '' });
    expect(tenantA.status).toBe(200);
    expect(tenantA.body).toMatchObject({ id: 'tenant-a', status: 'active' });
  });

  it('refuses a token signed with the right key but without exp, or not yet valid', async () => {
    const [stored] = await env.platform.store.listSigningKeys();
    const key = await importJWK(
      JSON.parse(Keyring.parse(env.config.secretsKey!).open(stored.sealedPrivateJwk, 'signing-key')),
      'ES256',
    );
    // The issuer the discovery metadata names is the one tokens must carry.
    const { issuer } = await (await fetch(`${env.url}/.well-known/oauth-authorization-server`)).json();
    const token = (claims: (jwt: SignJWT) => SignJWT) =>
      claims(
        new SignJWT({ scope: 'flows:read', tenant_id: 'tenant-a' })
          .setProtectedHeader({ alg: 'ES256', kid: stored.kid })
          .setSubject(a.credentials.client_id)
          .setIssuer(issuer)
          .setAudience(env.config.authAudience)
          .setIssuedAt(),
      ).sign(key);
    const call = async (jwt: string) =>
      (await fetch(`${env.url}/api/v1/flows`, { headers: { authorization: `Bearer ${jwt}`, tenant_id: 'tenant-a' } }))
        .status;
    expect(await call(await token((jwt) => jwt.setExpirationTime('1h')))).toBe(200);
    expect(await call(await token((jwt) => jwt))).toBe(401);
    expect(await call(await token((jwt) => jwt.setExpirationTime('1h').setNotBefore('30m')))).toBe(401);
  });

  it('refuses wrong client secrets and unknown grant types at the token endpoint', async () => {
    const post = (body: object) =>
      fetch(`${env.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const wrong = await post({
      grant_type: 'client_credentials',
      client_id: a.credentials.client_id,
      client_secret: 'nope',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    expect(wrong.headers.get('content-type')).toMatch(/^application\/json/);
    const password = await post({ grant_type: 'password', client_id: 'x', client_secret: 'y' });
    expect(password.status).toBe(400);
    expect(await password.json()).toMatchObject({ error: 'unsupported_grant_type' });
    const missing = await post({ grant_type: 'client_credentials' });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: 'invalid_client' });
    const malformed = await post({ grant_type: 'client_credentials', client_id: 'a\u0000b', client_secret: 'y' });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error_description).toMatch(/^\$\.body\.client_id /);
  });

  it('reads a token request sent without a Content-Type, as JSON or as a form, and names the types it reads', async () => {
    const { client_id, client_secret } = a.credentials;
    // Bytes: fetch adds no Content-Type of its own (a string would be text/plain).
    const untyped = (body: string) =>
      fetch(`${env.url}/oauth/token`, { method: 'POST', body: new TextEncoder().encode(body) });
    for (const body of [
      JSON.stringify({ grant_type: 'client_credentials', client_id, client_secret }),
      new URLSearchParams({ grant_type: 'client_credentials', client_id, client_secret }).toString(),
    ]) {
      const answer = await untyped(body);
      expect(answer.status, body).toBe(200);
      expect(await answer.json()).toMatchObject({ token_type: 'Bearer', access_token: expect.any(String) });
    }
    const garbled = await untyped('{"grant_type": ');
    expect(garbled.status).toBe(400);
    expect((await garbled.json()).error_description).toMatch(/^the body is not valid JSON/);
    const plain = await fetch(`${env.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'grant_type=client_credentials',
    });
    expect(plain.status).toBe(400);
    expect(await plain.json()).toEqual({
      error: 'invalid_request',
      error_description:
        'a body of text/plain cannot be read: send application/x-www-form-urlencoded (RFC 6749) or application/json',
    });
  });

  it('echoes a plausible x-request-id and makes one otherwise', async () => {
    expect(
      (await a.call('GET', '/api/v1/runs', undefined, { 'x-request-id': 'trace-123' })).headers.get('x-request-id'),
    ).toBe('trace-123');
    expect(
      (await a.call('GET', '/api/v1/runs', undefined, { 'x-request-id': 'bad id with spaces' })).headers.get(
        'x-request-id',
      ),
    ).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      env.lines.some((line) => line.includes('"reqId":"trace-123"') && line.includes('"path":"/api/v1/runs"')),
    ).toBe(true);
  });

  it('lets an operator act for any tenant', async () => {
    const operator = await env.operator();
    expect((await operator.as('tenant-a').call('GET', `/api/v1/editable-flows/${flowA}`)).status).toBe(200);
  });
});

describe('behind a proxy', () => {
  it("verifies the embedded issuer's tokens in the process: an unreachable PUBLIC_URL changes nothing", async () => {
    const proxied = await startTestPlatform(
      'postgres',
      { api: true, worker: false },
      { publicUrl: 'http://127.0.0.1:9' },
    );
    try {
      expect(proxied.platform.url).toBe('http://127.0.0.1:9');
      const acme = await proxied.tenant('acme');
      expect((await acme.call('GET', '/api/v1/flows')).status).toBe(200);
    } finally {
      await proxied.close();
    }
  });

  it("names AUTH_JWKS_URL when an external identity provider's keys cannot be fetched", async () => {
    const external = await startTestPlatform(
      'postgres',
      { api: true, worker: false },
      { authJwksUrl: 'http://127.0.0.1:9/jwks.json' },
    );
    try {
      const refused = await fetch(`${external.url}/api/v1/flows`, {
        headers: { authorization: `Bearer ${a.token}`, tenant_id: 'tenant-a' },
      });
      expect(refused.status).toBe(503);
      expect((await refused.json()).detail).toContain('AUTH_JWKS_URL (http://127.0.0.1:9/jwks.json)');
    } finally {
      await external.close();
    }
  });
});

describe('a flow URL served by several API processes', () => {
  it('is refused everywhere once deactivated or deleted, and reaches the new version or flow at once', async () => {
    // A second API process that would reuse a URL's resolution for a minute: the store has the last word.
    const other = await startSiblingApi(env, { intakeCacheTtlMs: 60_000 });
    try {
      const document = (answer: string) => ({
        key: 'moving',
        name: 'moving',
        trigger: { type: 'webhook', config: {} },
        nodes: [{ id: 'answer', operation: 'transform', config: { expression: `'${answer}'` } }],
        edges: [{ from: 'trigger', to: 'answer' }],
      });
      const runOf = async (accepted: { status: number; body: any }) => {
        expect(accepted.status).toBe(202);
        return (await a.call('GET', `/api/v1/runs/${accepted.body.runId}`)).body;
      };
      const first = await a.publish(document('v1'));
      expect(await runOf(await sendWebhook(other.url, 'tenant-a', 'moving', {}))).toMatchObject({ flowVersion: 1 });
      const draft = (await a.call('GET', `/api/v1/editable-flows/${first}`)).body;
      await a.call('PUT', `/api/v1/editable-flows/${first}`, { revision: draft.revision, document: document('v2') });
      expect((await a.call('POST', `/api/v1/editable-flows/${first}/publish`)).status).toBe(201);
      expect(await runOf(await sendWebhook(other.url, 'tenant-a', 'moving', {}))).toMatchObject({ flowVersion: 2 });

      expect((await a.call('DELETE', `/api/v1/editable-flows/${first}`)).status).toBe(204);
      // The key saved again is a new flow: the old resolution routes nothing to the deleted one.
      const second = await a.publish(document('again'));
      expect(await runOf(await sendWebhook(other.url, 'tenant-a', 'moving', {}))).toMatchObject({
        flowId: second,
        flowVersion: 1,
      });
      expect((await a.call('DELETE', `/api/v1/editable-flows/${second}`)).status).toBe(204);
      expect((await sendWebhook(other.url, 'tenant-a', 'moving', {})).status).toBe(404);

      const paused = await a.publish({ ...document('paused'), key: 'paused' });
      expect(await runOf(await sendWebhook(other.url, 'tenant-a', 'paused', {}))).toMatchObject({ flowId: paused });
      expect((await a.call('POST', `/api/v1/flows/${paused}/deactivate`)).status).toBe(200);
      expect((await sendWebhook(other.url, 'tenant-a', 'paused', {})).status).toBe(404);
    } finally {
      await other.close();
    }
  });
});

describe('tenant isolation', () => {
  it('tenant B cannot read, change, publish, delete or trigger what tenant A owns', async () => {
    expect((await b.call('GET', `/api/v1/editable-flows/${flowA}`)).status).toBe(404);
    expect((await b.call('GET', `/api/v1/flows/${flowA}`)).status).toBe(404);
    expect((await b.call('PUT', `/api/v1/editable-flows/${flowA}`, { revision: 1, document: example })).status).toBe(
      404,
    );
    expect((await b.call('POST', `/api/v1/editable-flows/${flowA}/publish`)).status).toBe(404);
    expect((await b.call('POST', `/api/v1/flows/${flowA}/deactivate`)).status).toBe(404);
    expect((await b.call('DELETE', `/api/v1/editable-flows/${flowA}`)).status).toBe(404);
    expect((await b.call('GET', '/api/v1/editable-flows')).body.nodes).toEqual([]);
    expect((await b.call('GET', '/api/v1/global-variables/ERP_URL')).status).toBe(404);
    expect((await b.call('GET', '/api/v1/global-variables')).body.nodes).toEqual([]);
    expect((await b.call('GET', '/api/v1/secret-global-variables')).body.nodes).toEqual([]);
    expect((await b.call('DELETE', '/api/v1/secret-global-variables/ERP_TOKEN')).status).toBe(404);
    expect((await sendWebhook(env.url, 'tenant-b', 'orders-to-erp', { id: 1 })).status).toBe(404);

    const accepted = await sendWebhook(env.url, 'tenant-a', 'orders-to-erp', { id: 1 });
    expect(accepted.status).toBe(202);
    expect((await b.call('GET', `/api/v1/runs/${accepted.body.runId}`)).status).toBe(404);
    expect((await b.call('GET', '/api/v1/runs')).body.nodes).toEqual([]);
    expect((await a.call('GET', `/api/v1/runs/${accepted.body.runId}`)).status).toBe(200);
    // Tenant A's flow still exists and is unchanged.
    expect((await a.call('GET', `/api/v1/editable-flows/${flowA}`)).body).toMatchObject({ revision: 1, active: true });
  });
});

describe('request validation', () => {
  it('answers problem+json naming each bad field', async () => {
    const response = await a.call('POST', '/api/v1/editable-flows', {
      ...example,
      key: 'bad-flow',
      nodes: [{ id: 'send', operation: 'http.request', config: { url: 'not a url', method: 'BREW' } }],
      edges: [{ from: 'trigger', to: 'send' }],
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(response.body.errors).toEqual(
      expect.arrayContaining([
        { path: '$.body.nodes[0].config.url', message: expect.any(String), node: 'send' },
        { path: '$.body.nodes[0].config.method', message: expect.any(String), node: 'send' },
      ]),
    );
  });

  it('never answers 500 to malformed input', async () => {
    const json = { 'content-type': 'application/json' };
    const raw = (path: string, init: RequestInit) =>
      fetch(`${env.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${a.token}`, tenant_id: 'tenant-a', ...init.headers },
      });
    const malformed = await raw('/api/v1/editable-flows', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"key": 1,}',
    });
    expect(malformed.status).toBe(400);
    // The same words, with the position, at the API, at a flow URL and at the token endpoint.
    const told = /^the body is not valid JSON: .* at position 10/;
    expect((await malformed.json()).detail).toMatch(told);
    const atHook = await fetch(`${env.url}/hooks/tenant-a/orders-to-erp`, {
      method: 'POST',
      headers: json,
      body: '{"key": 1,}',
    });
    expect((await atHook.json()).detail).toMatch(told);
    const atToken = await fetch(`${env.url}/oauth/token`, { method: 'POST', headers: json, body: '{"key": 1,}' });
    expect(atToken.status).toBe(400);
    expect(await atToken.json()).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(told) });
    const wrongType = await raw('/api/v1/editable-flows', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(wrongType.status).toBe(415);
    const tooLarge = await raw('/api/v1/global-variables/BIG', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'x'.repeat(70_000) }),
    });
    expect(tooLarge.status).toBe(413);
    expect((await tooLarge.json()).detail).toContain('BODY_LIMIT');
    // Bodies over 32 KiB are checked in a thread, with the verdicts smaller ones get.
    const pad = 'y'.repeat(50_000);
    for (const [body, title] of [
      [`{"value": "${pad}\\ud800"}`, 'Invalid body'],
      [`{"value": "${pad}", "n": 1e400}`, 'Invalid body'],
      [`{"value": "${pad}"`, 'Malformed JSON'],
      [`"${pad}"`, 'Malformed JSON'],
      ['{"value": 1e400}', 'Invalid body'],
      // An integer no JSON number here holds exactly: refused, neither rounded nor turned into a string.
      ['{"value": 820982911946154508}', 'Invalid body'],
      [`{"value": "${pad}", "n": -9007199254740993}`, 'Invalid body'],
    ]) {
      const refused = await raw('/api/v1/global-variables/LARGE', { method: 'PUT', headers: json, body });
      expect(refused.status, body.slice(-20)).toBe(400);
      expect(await refused.json()).toMatchObject({ title, errors: [{ path: '$.body', message: expect.any(String) }] });
    }
    const large = await raw('/api/v1/global-variables/LARGE', {
      method: 'PUT',
      headers: json,
      body: `{"value":"${pad}"}`,
    });
    expect(large.status).toBe(201);
    const indented = await raw('/api/v1/global-variables/LARGE', {
      method: 'PUT',
      headers: json,
      body: `${' '.repeat(100)}\n{"value":"${pad}"}`,
    });
    expect(indented.status).toBe(200);
    expect(await (await raw('/api/v1/global-variables/LARGE', { method: 'GET' })).json()).toMatchObject({ value: pad });
    const badEnum = await raw('/api/v1/runs?status=nope', { method: 'GET' });
    expect((await badEnum.json()).errors).toEqual([
      { path: '$.query.status', message: expect.stringContaining('"running"') },
    ]);
    for (const path of [
      '/api/v1/runs/%00',
      '/api/v1/runs?first=0',
      '/api/v1/runs?first=abc',
      '/api/v1/runs?after=%%%',
      '/api/v1/flows/1/versions/x',
      '/api/v1/runs?status=nope',
    ]) {
      const response = await raw(path, { method: 'GET' });
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.status, path).toBeLessThan(500);
    }
    const hook = await fetch(`${env.url}/hooks/tenant-a/orders-to-erp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(hook.status).toBe(400);
    for (const body of ['{"a":"x\\u0000y"}', `${'{"a":'.repeat(150)}1${'}'.repeat(150)}`]) {
      const hookResponse = await fetch(`${env.url}/hooks/tenant-a/orders-to-erp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(hookResponse.status).toBe(400);
      expect((await hookResponse.json()).errors).toEqual([{ path: '$.body', message: expect.any(String) }]);
      const apiResponse = await raw('/api/v1/global-variables/ODD', {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: `{"value": ${body}}`,
      });
      expect(apiResponse.status).toBe(400);
    }
    const longKey = await fetch(`${env.url}/hooks/tenant-a/orders-to-erp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(300) },
      body: '{}',
    });
    expect(longKey.status).toBe(400);
    expect((await longKey.json()).errors).toEqual([
      { path: '$.headers["idempotency-key"]', message: expect.stringContaining('256') },
    ]);
    expect(
      (
        await fetch(`${env.url}/hooks/tenant-a/orders-to-erp?x=%00`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(400);
    // The dashboard's sign-in form takes text too: what names no client is a 401 page, never a 500.
    for (const form of [
      'client_id=%00&client_secret=x',
      'client_id=%ED%A0%80&client_secret=x',
      `client_id=${'a'.repeat(5000)}&client_secret=x`,
    ]) {
      const signIn = await fetch(`${env.url}/admin/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
        redirect: 'manual',
      });
      expect([401, 413], form.slice(0, 40)).toContain(signIn.status);
    }
    const bigHook = await fetch(`${env.url}/hooks/tenant-a/orders-to-erp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x: 'y'.repeat(70_000) }),
    });
    expect(bigHook.status).toBe(413);
    expect((await bigHook.json()).detail).toContain('BODY_LIMIT');
  });

  it("takes a flow URL's body gzipped, names deliveries by request id, refuses what it cannot read", async () => {
    const hookUrl = `${env.url}/hooks/tenant-a/orders-to-erp`;
    const json = { 'content-type': 'application/json' };
    const zipped = await fetch(hookUrl, {
      method: 'POST',
      headers: { ...json, 'content-encoding': 'gzip', 'x-request-id': 'sender-req-1' },
      body: gzipSync(JSON.stringify({ id: 77, total: 1 })),
    });
    expect(zipped.status).toBe(202);
    expect(zipped.headers.get('x-request-id')).toBe('sender-req-1');
    const { messageId } = await zipped.json();
    expect((await a.call('GET', `/api/v1/messages/${messageId}`)).body.body).toEqual({ id: 77, total: 1 });
    // A trailing slash is the same flow URL; the query string is kept with the message.
    const slashed = await fetch(`${hookUrl}/?source=test&tag=a&tag=b`, {
      method: 'POST',
      headers: json,
      body: '{"id":78}',
    });
    expect(slashed.status).toBe(202);
    expect(slashed.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await a.call('GET', `/api/v1/messages/${(await slashed.json()).messageId}`)).body.query).toEqual({
      source: 'test',
      tag: ['a', 'b'],
    });

    const refusals: Array<[RequestInit, number, string]> = [
      [{ headers: { ...json, 'content-encoding': 'compress' }, body: '{}' }, 415, 'Unsupported media type'],
      [{ headers: { ...json, 'content-encoding': 'gzip' }, body: '{"not":"gzip"}' }, 400, 'Invalid body'],
      [
        { headers: { ...json, 'content-encoding': 'gzip' }, body: gzipSync(`{"x":"${'y'.repeat(200_000)}"}`) },
        413,
        'Payload too large',
      ],
      [{ headers: { 'content-type': 'text/plain' }, body: 'hello' }, 415, 'Unsupported media type'],
      // Nothing to run on, and a number JSON turns into null: refused, not accepted as null.
      [{ headers: json, body: '' }, 400, 'Empty body'],
      [{ headers: json, body: '{"total": 1e400, "note": "1e400 in a string is fine"}' }, 400, 'Invalid body'],
      // Bodies over 32 KiB are checked in a thread, with the same verdicts.
      [{ headers: json, body: `{"pad": "${'y'.repeat(50_000)}"` }, 400, 'Malformed JSON'],
      [{ headers: json, body: `{"pad": "${'y'.repeat(50_000)}\\ud800"}` }, 400, 'Invalid body'],
      [{ headers: json, body: `{"pad": "${'y'.repeat(50_000)}", "total": 1e400}` }, 400, 'Invalid body'],
    ];
    expect((await fetch(hookUrl, { method: 'POST', headers: json, body: '{"note": "1e400"}' })).status).toBe(202);
    const big = await fetch(hookUrl, {
      method: 'POST',
      headers: json,
      body: `{"pad": "${'y'.repeat(50_000)}", "n": 1}`,
    });
    expect(big.status).toBe(202);
    const kept = await a.call('GET', `/api/v1/messages/${(await big.json()).messageId}`);
    expect(kept.body.body).toEqual({ pad: 'y'.repeat(50_000), n: 1 });
    for (const [init, status, title] of refusals) {
      const response = await fetch(hookUrl, { method: 'POST', ...init });
      expect(response.status, title).toBe(status);
      expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(await response.json()).toMatchObject({ type: REFUSAL_TYPES[status], status, title });
    }
    // Streamed without a length, over the limit: refused as soon as it is, not read to its end.
    const streamed = await new Promise<number>((resolve, reject) => {
      const request = http.request(hookUrl, { method: 'POST', headers: json }, (response) =>
        resolve(response.statusCode!),
      );
      request.on('error', reject);
      for (let i = 0; i < 10; i++) request.write('x'.repeat(10_000));
      request.end();
    });
    expect(streamed).toBe(413);
    // Other methods and paths under /hooks are the app's, and it has no such route.
    for (const [method, path] of [
      ['GET', '/hooks/tenant-a/orders-to-erp'],
      ['POST', '/hooks/tenant-a'],
      ['POST', '/hooks/tenant-a/orders-to-erp/extra'],
    ]) {
      const response = await fetch(`${env.url}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
  });

  it('refuses a stale revision with 409 and keeps the newer draft', async () => {
    const created = await a.call('POST', '/api/v1/editable-flows', { ...example, key: 'occ-flow' });
    const first = await a.call('PUT', `/api/v1/editable-flows/${created.body.id}`, {
      revision: 1,
      document: { ...example, key: 'occ-flow', name: 'first' },
    });
    expect(first.body.revision).toBe(2);
    const stale = await a.call('PUT', `/api/v1/editable-flows/${created.body.id}`, {
      revision: 1,
      document: { ...example, key: 'occ-flow', name: 'second' },
    });
    expect(stale.status).toBe(409);
    expect((await a.call('GET', `/api/v1/editable-flows/${created.body.id}`)).body.name).toBe('first');
    expect((await a.call('POST', `/api/v1/editable-flows/${created.body.id}/publish`, { revision: 1 })).status).toBe(
      409,
    );
    const moved = await a.call('PUT', `/api/v1/editable-flows/${created.body.id}`, {
      revision: 2,
      document: { ...example, key: 'new-url' },
    });
    expect(moved.status).toBe(400);
    expect(moved.body.errors).toEqual([{ path: '$.body.document.key', message: expect.stringContaining('occ-flow') }]);
  });

  it("pins each published node to its operation's major; the draft keeps what the author wrote", async () => {
    const version = (await a.call('GET', `/api/v1/flows/${flowA}/versions/1`)).body;
    expect(
      version.document.nodes.map((node: { operation: string; operationVersion: number }) => [
        node.operation,
        node.operationVersion,
      ]),
    ).toEqual([
      ['transform', 1],
      ['http.request', 1],
    ]);
    const draft = (await a.call('GET', `/api/v1/editable-flows/${flowA}`)).body.draft;
    expect(draft.nodes.map((node: object) => 'operationVersion' in node)).toEqual([false, false]);
  });

  it('keeps secrets write-only', async () => {
    const put = await a.call('PUT', '/api/v1/secret-global-variables/OTHER', { value: 'shh-value-123' });
    expect(put.status).toBe(201);
    const list = await a.call('GET', '/api/v1/secret-global-variables');
    expect(list.body.nodes.map((secret: { name: string }) => secret.name)).toEqual(['ERP_TOKEN', 'OTHER']);
    expect(put.text + list.text).not.toContain('shh-value-123');
    expect(env.lines.join('')).not.toContain('shh-value-123');
  });

  it('refuses a secret too short to be masked safely', async () => {
    const put = await a.call('PUT', '/api/v1/secret-global-variables/SHORT', { value: 'abc1234' });
    expect(put.status).toBe(400);
    expect(put.body.errors).toEqual([expect.objectContaining({ path: '$.body.value' })]);
    expect(
      (await a.call('GET', '/api/v1/secret-global-variables')).body.nodes.map((s: { name: string }) => s.name),
    ).not.toContain('SHORT');
  });
});

describe('OpenAPI document', () => {
  it('tags every route with a tag and describes each tag with its label', async () => {
    const document = await (await fetch(`${env.url}/openapi.json`)).json();
    expect(document.openapi).toBe('3.1.0');
    const tags = new Set(document.tags.map((tag: { name: string }) => tag.name));
    for (const methods of Object.values<any>(document.paths))
      for (const operation of Object.values<any>(methods)) expect(tags.has(operation.tags[0])).toBe(true);
    expect(document.tags).toContainEqual({ name: 'EditableFlow', description: 'flow editing' });
    expect(document.paths['/api/v1/editable-flows'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/FlowDocument',
    });
  });

  it('declares every path parameter, names every operation once, and marks operator routes', async () => {
    // What Redocly's recommended rules ask of the document as a whole.
    const served = await (await fetch(`${env.url}/openapi.json`)).json();
    expect(served.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(served.info.license).toEqual(expect.objectContaining({ name: expect.any(String) }));
    const document = await (await fetch(`${env.url}/openapi.json`)).json();
    const operationIds = new Set<string>();
    for (const [path, methods] of Object.entries<any>(document.paths)) {
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
      for (const [method, operation] of Object.entries<any>(methods)) {
        const declared = (operation.parameters ?? [])
          .filter((parameter: any) => parameter.in === 'path')
          .map((parameter: any) => parameter.name)
          .sort();
        expect(declared, `${method} ${path}`).toEqual(templated);
        // Every operation has an id, once (a generated client names its methods by them).
        expect(operation.operationId, `${method} ${path}`).toEqual(expect.any(String));
        expect(operationIds.has(operation.operationId), operation.operationId).toBe(false);
        operationIds.add(operation.operationId);
        // Tenant routes take the tenant_id header with the token (security scheme `tenant`); operator routes do not.
        const operator = operation.security?.[0]?.oauth2?.[0] === 'platform:admin';
        if (path.startsWith('/api/v1/') && !operation.deprecated)
          expect('tenant' in (operation.security?.[0] ?? {}), `${method} ${path}`).toBe(!operator);
      }
    }
    expect(operationIds.size).toBeGreaterThan(80);
  });
});

describe('queue dashboard', () => {
  it('is for operators only: Basic with an operator client, or an operator token', async () => {
    expect((await fetch(`${env.url}/admin/queues`)).status).toBe(401);
    const tenantBasic = Buffer.from(`${a.credentials.client_id}:${a.credentials.client_secret}`).toString('base64');
    expect(
      (await fetch(`${env.url}/admin/queues`, { headers: { authorization: `Basic ${tenantBasic}` } })).status,
    ).toBe(401);
    expect((await fetch(`${env.url}/admin/queues`, { headers: { authorization: `Bearer ${a.token}` } })).status).toBe(
      401,
    );
    const operator = await env.operator();
    const basic = Buffer.from(`${operator.credentials.client_id}:${operator.credentials.client_secret}`).toString(
      'base64',
    );
    const page = await fetch(`${env.url}/admin/queues`, { headers: { authorization: `Basic ${basic}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    const queues = await fetch(`${env.url}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${operator.token}` },
    });
    expect(queues.status).toBe(200);
    expect(JSON.stringify(await queues.json())).toContain('"runs"');
  });
});

describe('metadata, operations and the reference page', () => {
  it('lists the registered operations with their config schemas, deprecation and fan-out', async () => {
    const { nodes } = (await a.call('GET', '/api/v1/low-code-actions/operations')).body;
    const byName = Object.fromEntries(nodes.map((operation: any) => [operation.name, operation]));
    expect(byName['shopify.refund-sync-to-erp']).toMatchObject({
      title: '[DEPRECATED] - Refund sync to ERP',
      deprecated: true,
      successor: 'shopify.orders-import-list',
      sideEffects: true,
      fanOut: false,
      configSchema: expect.objectContaining({ required: ['destination'] }),
    });
    expect(byName['shopify.orders-import-list']).toMatchObject({ deprecated: false, successor: null, fanOut: true });
    expect(byName.transform).toMatchObject({ kind: 'operation', sideEffects: false });
    // And every kind of node the engine runs itself, which a node names in `operation` the same way.
    for (const [name, sideEffects] of [
      ['loop', false],
      ['wait', false],
      ['call', true],
      ['reply', true],
    ] as const)
      expect(byName[name], name).toMatchObject({
        kind: 'node',
        sideEffects,
        configSchema: expect.objectContaining({ type: 'object' }),
      });
  });

  it('serves the same schemas the server validates with, and the status enums', async () => {
    const metadata = (await a.call('GET', '/api/v1/metadata')).body;
    expect(metadata.schemas.FlowDocument).toEqual(JSON.parse(JSON.stringify(flowDocumentSchema)));
    expect(metadata.enums.runStatuses).toEqual([...runStatuses]);
    expect((await a.call('GET', '/api/v1/metadata/schemas/Run')).body).toEqual(JSON.parse(JSON.stringify(runSchema)));
    const unknown = await a.call('GET', '/api/v1/metadata/schemas/Nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('FlowDocument');
  });

  it('publishes each schema in full, and every answer a test receives is checked against it', async () => {
    const document = await (await fetch(`${env.url}/openapi.json`)).json();
    expect(document.components.schemas.FlowDocument.required).toEqual(['key', 'name', 'trigger', 'nodes', 'edges']);
    // The check ApiClient applies to every answer (test/support/openapi-contract.ts) refuses what breaks the document.
    const contract = await OpenApiContract.of(env.url);
    const run = (await a.call('GET', '/api/v1/runs?first=1')).body;
    expect(contract.violations('GET', '/api/v1/runs', 200, run)).toEqual([]);
    expect(contract.violations('GET', '/api/v1/runs', 200, { nodes: 'none' })).toEqual(
      expect.arrayContaining([expect.stringContaining('/nodes must be array')]),
    );
    expect(contract.violations('GET', '/api/v1/runs', 418, {})).toEqual([expect.stringContaining('does not list')]);
    expect(contract.violations('GET', '/api/v1/nowhere', 200, {})).toEqual([
      expect.stringContaining('is not in /openapi.json'),
    ]);
  });

  it('sends a visit to / (the address the start banner prints) to /docs', async () => {
    const root = await fetch(`${env.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/docs');
  });

  it('renders an API reference at /docs from the OpenAPI document, every tag with its label', async () => {
    const page = await fetch(`${env.url}/docs`);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    for (const label of Object.values(apiTags)) expect(html).toContain(label);
    expect(html).toContain('/api/v1/batches/{id}/retry');
    // Self-contained: its one script is inline, nothing is loaded from elsewhere.
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/);
  });
});
