import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tributary } from './support/cli.ts';
import { Receiver } from './support/receiver.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// A tenant's environments (decision 28): staging and production apart, a version promoted from one to the other.
let env: TestPlatform;
let acme: ApiClient;
let staging: ApiClient;
let stagingErp: Receiver;
let productionErp: Receiver;
let folder: string;

/** orders-to-erp, sending the ERP's token from a secret: what a promotion must find in its target. */
function ordersFlow(marker: string) {
  const document = JSON.parse(readFileSync(path.join('flows', 'orders-to-erp.json'), 'utf8'));
  document.nodes[0].config.expression = `{{ {'id': $input.body.id, 'via': '${marker}'} }}`;
  document.nodes[1].config.headers = { authorization: 'Bearer {{ $secrets.ERP_TOKEN }}' };
  return document;
}

/** `tributary <args>` for acme, with its full client. */
const cli = (...args: string[]) => tributary(acme, ...args);

const flowId = async (client: ApiClient, key: string) =>
  (await client.call('GET', '/api/v1/flows')).body.nodes.find((flow: { key: string }) => flow.key === key)?.id;

describe('environments and promotion, on PostgreSQL', () => {
  beforeAll(async () => {
    stagingErp = await new Receiver().start();
    productionErp = await new Receiver().start();
    env = await startTestPlatform('postgres');
    acme = await env.tenant('acme');
    staging = acme.in('staging');
    folder = mkdtempSync(path.join(os.tmpdir(), 'tributary-environments-'));
  });
  afterAll(async () => {
    rmSync(folder, { recursive: true, force: true });
    await stagingErp?.close();
    await productionErp?.close();
    await env?.close();
  });

  it('makes an environment the tenant works in with a header, apart from production', async () => {
    const missing = await staging.call('GET', '/api/v1/global-variables');
    expect(missing.status).toBe(404);
    expect(missing.body.errors).toEqual([
      { path: '$.headers.environment', message: 'names no environment of the tenant' },
    ]);
    expect((await acme.in('Staging!').call('GET', '/api/v1/global-variables')).status).toBe(400);

    const created = await acme.call('POST', '/api/v1/environments', { name: 'staging' });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('staging');
    expect((await acme.call('POST', '/api/v1/environments', { name: 'staging' })).status).toBe(409);
    const listed = await staging.call('GET', '/api/v1/environments');
    expect(listed.body.nodes.map((environment: { name: string }) => environment.name)).toEqual([
      'production',
      'staging',
    ]);

    // Each keeps its own values.
    await staging.call('PUT', '/api/v1/global-variables/ERP_URL', { value: stagingErp.url });
    await staging.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: 'staging-token' });
    await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: productionErp.url });
    expect((await staging.call('GET', '/api/v1/global-variables/ERP_URL')).body.value).toBe(stagingErp.url);
    expect((await acme.call('GET', '/api/v1/global-variables/ERP_URL')).body.value).toBe(productionErp.url);
    expect((await acme.call('GET', '/api/v1/secret-global-variables')).body.nodes).toEqual([]);
  });

  it('refuses a promotion naming what production lacks, then promotes: each flow URL runs its own', async () => {
    await staging.publish(ordersFlow('v1'));
    const id = await flowId(staging, 'orders-to-erp');
    // A flow id of staging names nothing in production.
    expect((await acme.call('GET', `/api/v1/flows/${id}`)).status).toBe(404);

    // A version beyond what a version number holds is a bad field, not a store error.
    const huge = await staging.call('POST', `/api/v1/flows/${id}/promote`, { to: 'production', version: 2 ** 53 - 1 });
    expect(huge.status).toBe(400);
    expect(huge.body.errors[0].path).toBe('$.body.version');
    expect((await staging.call('POST', `/api/v1/flows/${id}/promote`, { to: 'Prod\u0000' })).status).toBe(400);
    const refused = await staging.call('POST', `/api/v1/flows/${id}/promote`, { to: 'production' });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe('production lacks what version 1 of orders-to-erp uses: nothing was promoted');
    expect(refused.body.errors).toEqual([
      expect.objectContaining({
        path: '$.nodes[1].config.headers.authorization',
        message: expect.stringContaining('$secrets.ERP_TOKEN'),
      }),
    ]);
    expect(await flowId(acme, 'orders-to-erp')).toBeUndefined();

    await acme.call('PUT', '/api/v1/secret-global-variables/ERP_TOKEN', { value: 'production-token' });
    const dryRun = await staging.call('POST', `/api/v1/flows/${id}/promote`, { to: 'production', dryRun: true });
    expect(dryRun.body).toMatchObject({ dryRun: true, to: { change: 'added', version: null } });
    expect(dryRun.body.to.diff).toContain(`+ $.key: "orders-to-erp"`);
    expect(await flowId(acme, 'orders-to-erp')).toBeUndefined();

    const promoted = await staging.call('POST', `/api/v1/flows/${id}/promote`, { to: 'production' });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({
      key: 'orders-to-erp',
      from: { environment: 'staging', version: 1 },
      to: { environment: 'production', version: 1, change: 'added' },
    });

    // Production's flow URL runs the promoted version with production's values; staging's, with its own.
    const inProduction = await sendWebhook(env.url, 'acme', 'orders-to-erp', { id: 1 });
    const inStaging = await sendWebhook(env.url, 'acme~staging', 'orders-to-erp', { id: 2 });
    expect([inProduction.status, inStaging.status]).toEqual([202, 202]);
    expect((await acme.settledRun(inProduction.body.runId)).status).toBe('succeeded');
    const stagingRun = await staging.settledRun(inStaging.body.runId);
    expect(stagingRun).toMatchObject({ status: 'succeeded', tenantId: 'acme~staging' });
    expect(productionErp.requests.map((request) => [JSON.parse(request.body), request.headers.authorization])).toEqual([
      [{ id: 1, via: 'v1' }, 'Bearer production-token'],
    ]);
    expect(stagingErp.requests.map((request) => [JSON.parse(request.body), request.headers.authorization])).toEqual([
      [{ id: 2, via: 'v1' }, 'Bearer staging-token'],
    ]);
    // A run is read in its own environment only.
    expect((await acme.call('GET', `/api/v1/runs/${inStaging.body.runId}`)).status).toBe(404);
  });

  it('promotes a new version as a change against what production runs, and the same version as unchanged', async () => {
    const changed = await staging.call('PUT', '/api/v1/flow-files/orders-to-erp?publish=true', ordersFlow('v2'));
    expect(changed.body.changes[0].published).toBe(2);

    const dryRun = await cli(
      'flows',
      'promote',
      '--key',
      'orders-to-erp',
      '--from',
      'staging',
      '--to',
      'production',
      '--dry-run',
    );
    expect(dryRun.code, dryRun.out).toBe(0);
    expect(dryRun.out).toContain('changed   orders-to-erp: staging version 2 -> production would run a new version');
    expect(dryRun.out).toMatch(/^ {4}~ \$\.nodes\[0\]\.config\.expression: ".*'v1'\} \}\}" -> ".*'v2'\} \}\}"$/m);
    const promoted = await cli('flows', 'promote', '--key', 'orders-to-erp', '--from', 'staging', '--to', 'production');
    expect(promoted.out).toContain('changed   orders-to-erp: staging version 2 -> production runs version 2');
    const again = await cli('flows', 'promote', '--key', 'orders-to-erp', '--from', 'staging', '--to', 'production');
    expect(again.out).toContain(
      'unchanged orders-to-erp: staging version 2 -> production (runs it already: version 2)',
    );

    const run = await sendWebhook(env.url, 'acme', 'orders-to-erp', { id: 3 });
    expect((await acme.settledRun(run.body.runId)).status).toBe('succeeded');
    expect(JSON.parse(productionErp.requests.at(-1)!.body)).toEqual({ id: 3, via: 'v2' });

    // Files per environment: staging's pull is staging's drafts.
    const pulled = await cli('flows', 'pull', '--env', 'staging', '--dir', folder);
    expect(pulled.out).toContain('pulled 1 flow of acme (staging)');
    const listed = await cli('environment', 'list');
    expect(listed.out).toMatch(/^production +created /m);
    expect(listed.out).toMatch(/^staging +created /m);
  });

  it('keeps a client limited to staging out of production', async () => {
    const stagingOnly = await env.client('acme', { environments: ['staging'] });
    const inProduction = await stagingOnly.call('GET', '/api/v1/editable-flows');
    expect(inProduction.status).toBe(403);
    expect(inProduction.body.detail).toBe('the token grants the environments staging of tenant acme, not production');
    expect((await stagingOnly.in('staging').call('GET', '/api/v1/editable-flows')).status).toBe(200);
    const id = await flowId(staging, 'orders-to-erp');
    expect(
      (await stagingOnly.in('staging').call('POST', `/api/v1/flows/${id}/promote`, { to: 'production' })).status,
    ).toBe(403);
    expect((await stagingOnly.in('staging').call('POST', '/api/v1/environments', { name: 'qa' })).status).toBe(403);
  });

  it('suspends every environment with its tenant, and deletes an environment with all it keeps', async () => {
    const operator = await env.operator();
    await operator.call('POST', '/api/v1/tenants/acme/suspend', { reason: 'unpaid' });
    expect((await staging.call('GET', '/api/v1/editable-flows')).status).toBe(403);
    await operator.call('POST', '/api/v1/tenants/acme/resume', {});
    expect((await staging.call('GET', '/api/v1/editable-flows')).status).toBe(200);
    // An environment is its tenant's, not a tenant an operator acts on alone.
    expect((await operator.call('GET', '/api/v1/tenants/acme~staging')).status).toBe(404);
    expect((await operator.call('POST', '/api/v1/tenants/acme~staging/suspend', { reason: 'x' })).status).toBe(404);
    expect((await operator.call('GET', '/api/v1/tenants')).body.nodes.map((t: { id: string }) => t.id)).toEqual([
      'acme',
    ]);

    expect((await acme.call('DELETE', '/api/v1/environments/production')).status).toBe(409);
    expect((await acme.call('DELETE', '/api/v1/environments/staging')).status).toBe(204);
    expect((await sendWebhook(env.url, 'acme~staging', 'orders-to-erp', { id: 4 })).status).toBe(404);
    expect((await staging.call('GET', '/api/v1/editable-flows')).status).toBe(404);
    // Production keeps its own.
    expect((await sendWebhook(env.url, 'acme', 'orders-to-erp', { id: 5 })).status).toBe(202);
  });
});
