import * as oidc from 'openid-client';
import { ClientCredentials } from 'simple-oauth2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// The token endpoint as the OAuth client libraries integrators use see it, with their defaults.
let env: TestPlatform;
let acme: ApiClient;

beforeAll(async () => {
  env = await startTestPlatform('pglite');
  acme = await env.tenant('acme');
});
afterAll(async () => {
  await env?.close();
});

const flowDocument = {
  key: 'oauth-made',
  name: 'made with a token from a library',
  trigger: { type: 'webhook' },
  nodes: [{ id: 'map', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
  edges: [{ from: 'trigger', to: 'map' }],
};
const call = (token: string, method: string, path: string, body?: object) =>
  fetch(`${env.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, tenant_id: 'acme', 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });

describe('standard OAuth 2.0 clients', () => {
  it('openid-client discovers the server and gets a token for the scopes it asks, and no more', async () => {
    const { client_id, client_secret } = acme.credentials;
    const config = await oidc.discovery(new URL(env.url), client_id, client_secret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    const metadata = config.serverMetadata();
    expect(metadata).toMatchObject({
      issuer: env.url,
      token_endpoint: `${env.url}/oauth/token`,
      jwks_uri: `${env.url}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    expect(metadata.scopes_supported).toContain('flows:write');
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'flows:read runs:read' });
    expect(tokens.scope).toBe('flows:read runs:read');
    expect((await call(tokens.access_token, 'GET', '/api/v1/editable-flows')).status).toBe(200);
    expect((await call(tokens.access_token, 'POST', '/api/v1/editable-flows', flowDocument)).status).toBe(403);

    // A scope that does not exist is refused in the library's own terms.
    await expect(oidc.clientCredentialsGrant(config, { scope: 'flows:read flows:fly' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
    const wrong = await oidc.discovery(new URL(env.url), client_id, 'not-the-secret', undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    await expect(oidc.clientCredentialsGrant(wrong)).rejects.toMatchObject({ error: 'invalid_client' });
  });

  it('simple-oauth2 with its defaults (Basic header, form body) gets a token; flows:read cannot write', async () => {
    const { client_id, client_secret } = acme.credentials;
    const client = new ClientCredentials({
      client: { id: client_id, secret: client_secret },
      auth: { tokenHost: env.url },
    });
    const reader = await client.getToken({ scope: 'flows:read' });
    expect(reader.token.scope).toBe('flows:read');
    expect((await call(String(reader.token.access_token), 'POST', '/api/v1/editable-flows', flowDocument)).status).toBe(
      403,
    );
    // Asking for nothing grants what the client holds.
    const writer = await client.getToken({});
    expect(String(writer.token.scope).split(' ')).toContain('flows:write');
    expect((await call(String(writer.token.access_token), 'POST', '/api/v1/editable-flows', flowDocument)).status).toBe(
      201,
    );

    const refused = await fetch(`${env.url}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client_id}:nope`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect(await refused.json()).toEqual({
      error: 'invalid_client',
      error_description: 'unknown client or wrong secret',
    });
  });
});
