import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  sendWebhook,
  startTestPlatform,
  type ApiClient,
  type StoreKind,
  type TestPlatform,
} from './support/harness.ts';
import { Receiver } from './support/receiver.ts';
import { eachLine } from './support/flow-documents.ts';

// Limits on what a tenant keeps, enforced by the store whichever way a write comes: the API or a run.
describe.each<StoreKind>(['postgres', 'pglite'])('tenant state limits (%s)', (kind) => {
  let env: TestPlatform;
  let acme: ApiClient;
  let other: ApiClient;

  beforeAll(async () => {
    env = await startTestPlatform(kind, undefined, {
      tenantMaxVariables: 3,
      tenantMaxVariableBytes: 4000,
      tenantMaxDocuments: 4,
      tenantMaxFlows: 2,
      maxStepOutputBytes: 20_000,
    });
    acme = await env.tenant('acme');
    other = await env.tenant('other');
  });
  afterAll(async () => {
    await env?.close();
  });

  it('refuses a variable past the count or the size, replaces one at the limit, and counts each tenant apart', async () => {
    for (const name of ['A', 'B', 'C'])
      expect((await acme.call('PUT', `/api/v1/global-variables/${name}`, { value: name })).status).toBe(201);
    const refused = await acme.call('PUT', '/api/v1/global-variables/D', { value: 'd' });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({
      type: '/docs#problem-limit-reached',
      title: 'Limit reached',
      limit: 'variables',
    });
    expect(refused.body.detail).toContain('TENANT_MAX_VARIABLES');
    expect((await acme.call('GET', '/api/v1/global-variables/D')).status).toBe(404);
    expect((await acme.call('PUT', '/api/v1/global-variables/A', { value: 'again' })).status).toBe(200);
    expect((await other.call('PUT', '/api/v1/global-variables/D', { value: 'd' })).status).toBe(201);

    const big = await acme.call('PUT', '/api/v1/global-variables/B', { value: 'x'.repeat(5000) });
    expect(big.status).toBe(409);
    expect(big.body.detail).toContain('TENANT_MAX_VARIABLE_BYTES');
    expect((await acme.call('GET', '/api/v1/global-variables/B')).body.value).toBe('B');

    expect((await acme.call('DELETE', '/api/v1/global-variables/C')).status).toBe(204);
    expect((await acme.call('PUT', '/api/v1/global-variables/D', { value: 'd' })).status).toBe(201);
    const { state } = (await acme.call('GET', '/api/v1/dashboard')).body;
    expect(state.variables).toMatchObject({ items: 3, maxItems: 3, maxBytes: 4000 });
    expect(state.variables.bytes).toBeGreaterThan(0);
    expect(state.secrets).toMatchObject({ items: 0, maxItems: 1000 });
  });

  it('refuses a bulk put past the limit all or none, and fails a run whose node would pass it, at once', async () => {
    expect((await acme.call('PUT', '/api/v1/data-spaces/orders', {})).status).toBe(201);
    const documents = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: { i } }));
    const bulk = await acme.call('POST', '/api/v1/data-spaces/orders/documents/bulk', { documents: documents(5) });
    expect(bulk.status).toBe(409);
    expect(bulk.body.detail).toContain('TENANT_MAX_DOCUMENTS');
    expect((await acme.call('GET', '/api/v1/data-spaces/orders/documents')).body.nodes).toEqual([]);
    const filled = await acme.call('POST', '/api/v1/data-spaces/orders/documents/bulk', { documents: documents(4) });
    expect(filled.status).toBe(200);

    await acme.publish({
      key: 'keep',
      name: 'keep',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'put',
          operation: 'dataspace.put',
          config: { space: 'orders', key: '{{ $input.body.key }}', value: '{{ $input.body }}' },
        },
      ],
      edges: [{ from: 'trigger', to: 'put' }],
    });
    const replaced = await sendWebhook(env.url, 'acme', 'keep', { key: 'k1' });
    expect((await acme.settledRun(replaced.body.runId)).status).toBe('succeeded');
    const added = await sendWebhook(env.url, 'acme', 'keep', { key: 'k9' });
    const run = await acme.settledRun(added.body.runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ kind: 'permanent' });
    expect(run.error.message).toContain('TENANT_MAX_DOCUMENTS');
    expect(run.steps.find((step: { nodeId: string }) => step.nodeId === 'put').attempts).toBe(1);
  });

  it('refuses a flow past the count', async () => {
    const flow = (key: string) => ({
      key,
      name: key,
      trigger: { type: 'webhook' },
      nodes: [{ id: 'keep', operation: 'transform', config: { expression: '{{ $input.body }}' } }],
      edges: [{ from: 'trigger', to: 'keep' }],
    });
    expect((await acme.call('POST', '/api/v1/editable-flows', flow('second'))).status).toBe(201);
    const refused = await acme.call('POST', '/api/v1/editable-flows', flow('third'));
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain('TENANT_MAX_FLOWS');
  });

  it("starts no more items once a loop's results are on course to outgrow its output, and fails saying so", async () => {
    const erp = await new Receiver().start();
    try {
      const looper = await env.tenant('looper');
      await looper.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url });
      await looper.publish(eachLine('lines', { concurrency: 2 }));
      const lines = (n: number) => ({ lines: Array.from({ length: n }, (_, line) => ({ line })) });
      const few = await sendWebhook(env.url, 'looper', 'lines', lines(5));
      expect((await looper.settledRun(few.body.runId)).status).toBe('succeeded');
      expect(erp.requests).toHaveLength(5);
      const many = await sendWebhook(env.url, 'looper', 'lines', lines(500));
      const run = await looper.settledRun(many.body.runId);
      expect(run).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'permanent', node: 'each' } });
      expect(run.error.message).toContain('MAX_STEP_OUTPUT_BYTES');
      // The items running when it was seen (two at a time) finished; no other started.
      expect(erp.requests.length - 5).toBeLessThanOrEqual(2);
    } finally {
      await erp.close();
    }
  });
});
