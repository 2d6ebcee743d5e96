import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpressionSandbox } from '../engine/expressions/index.ts';
import type { CompileOptions } from '../engine/flow/index.ts';
import { ConflictError, type FlowDocument, NotFoundError, ValidationError } from '../engine/model/index.ts';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { HttpClient } from '../engine/outbound/index.ts';
import { ActionRunner, OperationRegistry } from '../engine/plugins/index.ts';
import { TestRunner } from '../engine/runtime/index.ts';
import { Keyring } from '../engine/secrets/index.ts';
import { FlowService, ReplayService, TestRunService } from '../engine/services/index.ts';
import type { Store } from '../engine/store/index.ts';
import { allOperations, webhookSignatures } from '../operations/index.ts';
import { oneTransform } from './support/flow-documents.ts';
import { storeAdapters } from './support/stores.ts';

/** The use cases called as the API calls them, without HTTP: what they check, store and announce. */
describe.each(storeAdapters('services'))('engine services on %s', (_name, open) => {
  let store: Store;
  let cleanup: () => Promise<void>;
  const sandbox = new ExpressionSandbox({
    timeoutMs: 500,
    memoryMb: 64,
    maxDepth: 100,
    maxResultBytes: 1 << 20,
    processes: 1,
  });
  const compile: CompileOptions = {
    registry: new OperationRegistry(allOperations, webhookSignatures),
    sandbox,
    defaultTimeoutMs: 30_000,
  };
  /** What the flow service announced: the flows whose active version changed. */
  const announced: string[] = [];
  let flows: FlowService;
  beforeAll(async () => {
    ({ store, cleanup } = await open());
    await store.createTenant({ id: 'a', name: 'A' });
    await store.createTenant({ id: 'b', name: 'B' });
    flows = new FlowService(store, compile, async (tenantId, flow) => {
      announced.push(`${tenantId}/${flow.key}`);
    });
  });
  afterAll(async () => {
    await cleanup();
    await sandbox.close();
  });

  const reading = (key: string): FlowDocument => ({
    ...oneTransform(key),
    nodes: [{ id: 'a', operation: 'transform', config: { expression: '{{ $vars.ERP_URL }}' } }],
  });

  it('publishes the draft as the active version, pinned, warning of the values it reads that are not set', async () => {
    const flow = await flows.create('a', reading('pub'));
    const version = await flows.publish('a', flow.id);
    expect(version.version).toBe(1);
    expect(version.document.nodes[0]).toMatchObject({ operationVersion: expect.any(Number) });
    expect(version.warnings).toEqual([
      expect.objectContaining({
        path: expect.stringMatching(/^\$\.draft\.nodes\[0\]/),
        message: expect.stringMatching(/ERP_URL/),
      }),
    ]);
    expect(announced).toContain('a/pub');
    expect((await flows.get('a', flow.id)).activeVersion).toBe(1);
    // Tenant b sees none of it.
    await expect(flows.get('b', flow.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(flows.publish('b', flow.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('publishes nothing from a draft naming an action the tenant lacks, and says which node', async () => {
    const document: FlowDocument = {
      ...oneTransform('act'),
      nodes: [{ id: 'a', operation: 'action:missing', config: {} }],
    };
    const flow = await flows.create('a', document);
    const refused = await flows.publish('a', flow.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).errors).toEqual([
      { path: '$.draft.nodes[0].operation', message: 'names no action of this tenant: missing', node: 'a' },
    ]);
    expect((await flows.get('a', flow.id)).latestVersion).toBeNull();
    expect(announced).not.toContain('a/act');
  });

  it('names the fields of a document given from its root, keeps a flow key, and refuses a stale revision', async () => {
    const invalid = await flows.create('a', { ...oneTransform('bad'), edges: [] } as FlowDocument).catch((e) => e);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect((invalid as ValidationError).errors.every((error) => error.path.startsWith('$.'))).toBe(true);
    const flow = await flows.create('a', oneTransform('kept'));
    const moved = await flows.replaceDraft('a', flow.id, flow.revision, oneTransform('moved')).catch((e) => e);
    expect((moved as ValidationError).errors).toEqual([expect.objectContaining({ path: '$.key' })]);
    await flows.replaceDraft('a', flow.id, flow.revision, { ...oneTransform('kept'), name: 'renamed' });
    await expect(flows.replaceDraft('a', flow.id, flow.revision, oneTransform('kept'))).rejects.toBeInstanceOf(
      ConflictError,
    );
    const review = await flows.review('a', { ...reading('kept'), failureFlow: 'nowhere' });
    expect(review.errors).toEqual([]);
    expect(review.warnings.map((warning) => warning.path)).toEqual(
      expect.arrayContaining(['$.failureFlow', expect.stringMatching(/^\$\.nodes\[0\]/)]),
    );
  });

  it("installs a document's flow once: the second call finds it", async () => {
    const first = await flows.installed('a', oneTransform('installed'));
    const second = await flows.installed('a', oneTransform('installed'));
    expect(second.id).toBe(first.id);
    expect((await flows.listVersions('a', first.id, { first: 10 })).nodes).toHaveLength(1);
  });

  it('tries a draft or a document given without recording anything, naming bad fields where they are', async () => {
    const testRuns = new TestRunService(
      flows,
      compile,
      new TestRunner({
        store,
        actions: new ActionRunner(store, sandbox),
        keyring: new Keyring([{ id: 'k1', key: randomBytes(32) }]),
        logger: pino({ level: 'silent' }),
        http: new HttpClient(),
        maxOutputBytes: 1 << 20,
        recordExchanges: true,
      }),
    );
    const flow = await flows.create('a', {
      ...oneTransform('tried'),
      nodes: [{ id: 'a', operation: 'transform', config: { expression: '{{ $input.body.n * 2 }}' } }],
    });
    const tried = await testRuns.run('a', flow.id, { input: { body: { n: 21 } }, dryRun: true });
    expect(tried.status).toBe('succeeded');
    expect(tried.steps.map((step) => [step.key, step.output])).toEqual([['a', 42]]);
    expect((await store.listRuns('a', { flowId: flow.id }, { first: 1 })).nodes).toEqual([]);
    const given = await testRuns
      .run('a', flow.id, { document: { ...oneTransform('tried'), edges: [] }, input: {}, dryRun: true })
      .catch((error: unknown) => error);
    expect((given as ValidationError).errors.map((error) => error.path)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^\$\.document\./)]),
    );
    const missing = testRuns.run('a', flow.id, { input: {}, dryRun: true, node: 'nowhere' });
    await expect(missing).rejects.toBeInstanceOf(NotFoundError);
    await expect(testRuns.run('b', flow.id, { input: {}, dryRun: true })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses a replay filter naming another tenant's flow or batch as not found, each with its path", async () => {
    const replays = new ReplayService(store);
    const theirs = await flows.create('b', oneTransform('theirs'));
    const refused = await replays
      .count('a', { filter: { flowId: theirs.id, batchId: '019a0000-0000-7000-8000-000000000009' } })
      .catch((error: unknown) => error);
    // flowId does not go with batchId: that is said first, before anything is looked up.
    expect((refused as ValidationError).errors).toEqual([
      { path: '$.filter.flowId', message: 'does not go with batchId' },
    ]);
    const notFound = await replays.count('a', { filter: { flowId: theirs.id } }).catch((error: unknown) => error);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect((notFound as NotFoundError).errors).toEqual([
      { path: '$.filter.flowId', message: 'is not a flow of this tenant' },
    ]);
    expect(await replays.count('b', { filter: { flowId: theirs.id } })).toEqual({ count: 0, exact: true });
  });
});
