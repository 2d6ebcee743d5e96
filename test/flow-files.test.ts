import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tributary } from './support/cli.ts';
import { Receiver } from './support/receiver.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Flows as files: `tributary flows pull|push` against a running platform, with a tenant's client credentials.
let env: TestPlatform;
let acme: ApiClient;
let erp: Receiver;
const folders: string[] = [];

const example = (name: string) => JSON.parse(readFileSync(path.join('flows', `${name}.json`), 'utf8'));
const folder = () => {
  const made = mkdtempSync(path.join(os.tmpdir(), 'tributary-flows-'));
  folders.push(made);
  return made;
};
/** The folder's files and their bytes. */
const contents = (dir: string) =>
  Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(path.join(dir, name), 'utf8')]));

/** `tributary flows <args>` for acme. */
const cli = (...args: string[]) => tributary(acme, 'flows', ...args);

describe('flows as files, on PostgreSQL', () => {
  beforeAll(async () => {
    erp = await new Receiver().start();
    env = await startTestPlatform('postgres');
    acme = await env.tenant('acme');
    expect((await acme.call('PUT', '/api/v1/global-variables/ERP_URL', { value: erp.url })).status).toBeLessThan(300);
    await acme.publish(example('orders-to-erp'));
    await acme.publish(example('refund-sync-to-erp'));
  });
  afterAll(async () => {
    for (const made of folders) rmSync(made, { recursive: true, force: true });
    await erp?.close();
    await env?.close();
  });

  it('pulls each flow as a stable file, pushes without change, and pulls the same bytes again', async () => {
    const first = folder();
    const pulled = await cli('pull', '--dir', first);
    expect(pulled).toMatchObject({ code: 0, out: expect.stringContaining('pulled 2 flows of acme') });
    const files = contents(first);
    expect(Object.keys(files).sort()).toEqual(['orders-to-erp.flow.json', 'refund-sync-to-erp.flow.json', 'uses.json']);
    // Keys sorted, two spaces: the same draft always prints the same.
    const orders = JSON.parse(files['orders-to-erp.flow.json']);
    expect(files['orders-to-erp.flow.json']).toBe(`${JSON.stringify(orders, null, 2)}\n`);
    for (const object of [orders, orders.nodes[1], orders.nodes[1].config])
      expect(Object.keys(object)).toEqual(Object.keys(object).sort());
    expect(orders).toEqual(example('orders-to-erp'));
    // What each flow needs where it runs: names, never values.
    expect(JSON.parse(files['uses.json'])).toEqual({
      'orders-to-erp': { variables: ['ERP_URL'], secrets: [], destinations: [] },
      'refund-sync-to-erp': { variables: [], secrets: ['SHOPIFY_CLIENT_SECRET'], destinations: ['shop'] },
    });
    expect(files['uses.json']).not.toContain(erp.url);

    const pushed = await cli('push', '--dir', first);
    expect(pushed.code).toBe(0);
    expect(pushed.out).toContain('unchanged orders-to-erp.flow.json');
    expect(pushed.out).toContain('pushed: 0 added, 0 changed, 2 unchanged');
    const again = folder();
    expect((await cli('pull', '--dir', again)).code).toBe(0);
    expect(contents(again)).toEqual(files);
  });

  it('refuses a push with an invalid file, naming every file and path, and changes nothing', async () => {
    const dir = folder();
    await cli('pull', '--dir', dir);
    const before = (await acme.call('GET', '/api/v1/flow-files')).body;
    const orders = JSON.parse(readFileSync(path.join(dir, 'orders-to-erp.flow.json'), 'utf8'));
    orders.nodes[1].config.method = 'SEND';
    orders.name = 'Orders to the ERP';
    writeFileSync(path.join(dir, 'orders-to-erp.flow.json'), JSON.stringify(orders));
    const refunds = JSON.parse(readFileSync(path.join(dir, 'refund-sync-to-erp.flow.json'), 'utf8'));
    refunds.nodes[0].operation = 'shopify.no-such-operation';
    writeFileSync(path.join(dir, 'refund-sync-to-erp.flow.json'), JSON.stringify(refunds));
    writeFileSync(path.join(dir, 'broken.flow.json'), '{"key": ');

    // Not JSON: named before anything is sent.
    const unreadable = await cli('push', '--dir', dir);
    expect(unreadable.code).toBe(1);
    expect(unreadable.out).toMatch(/^broken\.flow\.json: not JSON: /m);
    rmSync(path.join(dir, 'broken.flow.json'));

    const refused = await cli('push', '--dir', dir, '--publish');
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/^orders-to-erp\.flow\.json: \$\.nodes\[1\]\.config\.method: /m);
    expect(refused.out).toMatch(/^refund-sync-to-erp\.flow\.json: \$\.nodes\[0\]\.operation: /m);
    expect(refused.out).toContain('nothing was changed');
    // The valid change of the same push was not made either.
    expect((await acme.call('GET', '/api/v1/flow-files')).body).toEqual(before);
  });

  it('shows what a push changes, then publishes it: the flow URL runs the pushed version', async () => {
    const dir = folder();
    await cli('pull', '--dir', dir);
    const file = path.join(dir, 'orders-to-erp.flow.json');
    const orders = JSON.parse(readFileSync(file, 'utf8'));
    orders.nodes[0].config.expression = "{{ {'id': $input.body.id, 'total': $input.body.total, 'pushed': true} }}";
    writeFileSync(file, `${JSON.stringify(orders, null, 2)}\n`);

    const dryRun = await cli('push', '--dir', dir, '--dry-run');
    expect(dryRun.code).toBe(0);
    expect(dryRun.out).toContain('changed   orders-to-erp.flow.json');
    expect(dryRun.out).toMatch(
      /^ {4}~ \$\.nodes\[0\]\.config\.expression: ".*'total': \$input\.body\.total\} \}\}" -> /m,
    );
    expect(dryRun.out).toContain('would push: 0 added, 1 changed, 1 unchanged (dry run: nothing changed)');
    const untouched = await acme.call('GET', '/api/v1/flow-files/orders-to-erp');
    expect(untouched.body.document.nodes[0].config.expression).not.toContain('pushed');

    const published = await cli('push', '--dir', dir, '--publish');
    expect(published.code).toBe(0);
    expect(published.out).toMatch(/^changed {3}orders-to-erp\.flow\.json \(published: version 2\)$/m);
    // The other flow ran its draft already: no new version.
    expect(published.out).toMatch(/^unchanged refund-sync-to-erp\.flow\.json$/m);
    const { runId } = (await sendWebhook(env.url, 'acme', 'orders-to-erp', { id: 7, total: 12 })).body;
    const run = await acme.settledRun(runId);
    expect(run.status).toBe('succeeded');
    expect(JSON.parse(erp.requests.at(-1)!.body)).toEqual({ id: 7, total: 12, pushed: true });
  });

  it("lets a tool PUT one flow's file: checked as a push is, naming the body's fields", async () => {
    const { body: file } = await acme.call('GET', '/api/v1/flow-files/orders-to-erp');
    const document = structuredClone(file.document);
    document.name = 'Orders to ERP, from CI';
    const dryRun = await acme.call('PUT', '/api/v1/flow-files/orders-to-erp?dryRun=true', document);
    expect(dryRun.status).toBe(200);
    expect(dryRun.body.changes).toEqual([
      {
        key: 'orders-to-erp',
        file: 'orders-to-erp.flow.json',
        change: 'changed',
        diff: [`~ $.name: "${file.document.name}" -> "Orders to ERP, from CI"`],
      },
    ]);

    const elsewhere = await acme.call('PUT', '/api/v1/flow-files/orders-to-erp', { ...document, key: 'orders-v2' });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.errors).toEqual([
      { path: '$.body.key', message: "must be the flow's key in the path: orders-to-erp" },
    ]);
    const invalid = structuredClone(document);
    invalid.nodes[1].config.method = 'SEND';
    const refused = await acme.call('PUT', '/api/v1/flow-files/orders-to-erp?publish=true', invalid);
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((error: { path: string }) => error.path)).toEqual(['$.body.nodes[1].config.method']);

    const published = await acme.call('PUT', '/api/v1/flow-files/orders-to-erp?publish=true', document);
    expect(published.body.changes[0]).toMatchObject({ change: 'changed', published: expect.any(Number) });
    const { body: flow } = await acme.call('GET', '/api/v1/flow-files/orders-to-erp');
    expect(flow.document.name).toBe('Orders to ERP, from CI');
  });

  it('pushes more files than one request takes in several, each checked before any is written', async () => {
    const bulk = await env.tenant('bulk');
    const dir = folder();
    const files = 520;
    for (let i = 0; i < files; i++) {
      const document = { ...example('orders-to-erp'), key: `orders-${String(i).padStart(3, '0')}` };
      writeFileSync(path.join(dir, `${document.key}.flow.json`), JSON.stringify(document));
    }
    // The last file, in the second request, is invalid: the first request's files are not written either.
    const last = path.join(dir, 'orders-519.flow.json');
    const invalid = JSON.parse(readFileSync(last, 'utf8'));
    invalid.nodes[1].config.method = 'SEND';
    writeFileSync(last, JSON.stringify(invalid));
    const refused = await tributary(bulk, 'flows', 'push', '--dir', dir);
    expect(refused.code, refused.out).toBe(1);
    expect(refused.out).toMatch(/^orders-519\.flow\.json: \$\.nodes\[1\]\.config\.method: /m);
    expect((await bulk.call('GET', '/api/v1/flow-files')).body.files).toEqual([]);

    invalid.nodes[1].config.method = 'POST';
    writeFileSync(last, JSON.stringify(invalid));
    const pushed = await tributary(bulk, 'flows', 'push', '--dir', dir);
    expect(pushed.code, pushed.out).toBe(0);
    expect(pushed.out).toContain(`pushed: ${files} added, 0 changed, 0 unchanged`);
    expect((await bulk.call('GET', '/api/v1/flow-files')).body.files).toHaveLength(files);
  });
});
