import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

let env: TestPlatform;
let acme: ApiClient;
let other: ApiClient;

beforeAll(async () => {
  env = await startTestPlatform('postgres');
  acme = await env.tenant('acme');
  other = await env.tenant('other');
});
afterAll(() => env?.close());

const secrets = { token: 'shpat_do-not-show-1', consumerSecret: 'cs-do-not-show-2', tokenSecret: 'ts-do-not-show-3' };
const destination = (extra: object = {}) => ({
  type: 'shopify',
  operation: 'shopify.refund-sync-to-erp',
  graphqlUrl: 'https://demo.myshopify.com/',
  adminApiAccessToken: secrets.token,
  erp: {
    apiUrl: 'https://1234567.restlets.api.netsuite.com/app/site/hosting/restlet.nl?script=12&deploy=1',
    consumerKey: 'ck-public-1',
    consumerSecret: secrets.consumerSecret,
    tokenId: 'tid-public-1',
    tokenSecret: secrets.tokenSecret,
    accountId: '1234567_SB1',
  },
  ...extra,
});

describe('destinations', () => {
  it('keeps credentials write-only: answers say which are set, never their values; sealed at rest', async () => {
    const created = await acme.call('PUT', '/api/v1/destinations/main-shop', destination());
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'main-shop',
      type: 'shopify',
      settings: {
        operation: 'shopify.refund-sync-to-erp',
        graphqlUrl: 'https://demo.myshopify.com/',
        erp: { accountId: '1234567_SB1', apiUrl: expect.stringContaining('restlet.nl') },
      },
      credentialsSet: [
        '$.adminApiAccessToken',
        '$.erp.consumerKey',
        '$.erp.consumerSecret',
        '$.erp.tokenId',
        '$.erp.tokenSecret',
      ],
    });
    const replaced = await acme.call(
      'PUT',
      '/api/v1/destinations/main-shop',
      destination({ adminApiAccessToken: undefined, clientId: 'client-id', clientSecret: 'client-secret-do-not-show' }),
    );
    expect(replaced.status).toBe(200);
    expect(replaced.body.credentialsSet).toEqual([
      '$.clientId',
      '$.clientSecret',
      '$.erp.consumerKey',
      '$.erp.consumerSecret',
      '$.erp.tokenId',
      '$.erp.tokenSecret',
    ]);

    const shown =
      (await acme.call('GET', '/api/v1/destinations/main-shop')).text +
      (await acme.call('GET', '/api/v1/destinations')).text +
      created.text +
      replaced.text;
    for (const value of [...Object.values(secrets), 'client-secret-do-not-show']) {
      expect(shown).not.toContain(value);
      expect(env.lines.join('\n')).not.toContain(value);
    }
    const db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    const { rows } = await db.query(`select * from ${env.config.databaseSchema}.destinations`);
    await db.end();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain('client-secret-do-not-show');
    expect(rows[0].sealed_credentials).toMatchObject({ keyId: 'test', ciphertext: expect.any(String) });
  });

  it('names the field at fault: both, neither, or half of the shop credentials, and malformed settings', async () => {
    const errorsOf = async (body: object) => {
      const response = await acme.call('PUT', '/api/v1/destinations/bad', body);
      expect(response.status).toBe(400);
      return response.body.errors.map((error: { path: string }) => error.path);
    };
    expect(await errorsOf(destination({ clientId: 'client-id', clientSecret: 'client-secret' }))).toEqual([
      '$.body.adminApiAccessToken',
    ]);
    expect(await errorsOf(destination({ adminApiAccessToken: undefined }))).toEqual(['$.body']);
    expect(await errorsOf(destination({ adminApiAccessToken: undefined, clientId: 'client-id' }))).toEqual([
      '$.body.clientSecret',
    ]);
    expect(await errorsOf(destination({ graphqlUrl: 'https://demo.myshopify.com' }))).toEqual(['$.body.graphqlUrl']);
    // Matches the pattern, but is no URL: refused here rather than failing every run.
    expect(await errorsOf(destination({ graphqlUrl: 'http://[::1/' }))).toEqual(['$.body.graphqlUrl']);
    const { tokenSecret: _omitted, ...erp } = destination().erp;
    expect(await errorsOf(destination({ erp }))).toEqual(['$.body.erp.tokenSecret']);
    // Too short to be masked safely wherever a run would echo it.
    expect(await errorsOf(destination({ erp: { ...destination().erp, consumerSecret: 'short' } }))).toEqual([
      '$.body.erp.consumerSecret',
    ]);
    expect((await acme.call('GET', '/api/v1/destinations/bad')).status).toBe(404);
  });

  it('belongs to its tenant, and is deleted by name', async () => {
    await acme.call('PUT', '/api/v1/destinations/second', destination());
    expect((await other.call('GET', '/api/v1/destinations/second')).status).toBe(404);
    expect((await other.call('GET', '/api/v1/destinations')).body.nodes).toEqual([]);
    expect((await other.call('DELETE', '/api/v1/destinations/second')).status).toBe(404);
    expect((await acme.call('DELETE', '/api/v1/destinations/second')).status).toBe(204);
    expect((await acme.call('GET', '/api/v1/destinations/second')).status).toBe(404);
  });
});
