import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, ValidationError } from '../engine/model/errors.ts';
import { environmentId } from '../engine/model/environments.ts';
import { newId } from '../engine/model/ids.ts';
import type { Store } from '../engine/store/port.ts';
import { storeAdapters } from './support/stores.ts';
import { oneTransform } from './support/flow-documents.ts';

const adapters = storeAdapters('contract');

const doc = oneTransform;

describe.each(adapters)('store contract on %s', (_name, open) => {
  let store: Store;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, cleanup } = await open());
    await store.createTenant({ id: 'a', name: 'A' });
    await store.createTenant({ id: 'b', name: 'B' });
  });
  afterAll(() => cleanup());

  /** A flow of the tenant's, published: messages are recorded for its active version only. */
  const publishedFlow = async (tenantId: string, key: string) => {
    const flow = await store.createFlow(tenantId, { id: newId(), key, name: key, draft: doc(key) });
    await store.publishFlow(tenantId, flow.id, flow.revision, doc(key));
    return flow;
  };
  /** A message of `body: 1` to version 1 of a flow, with nothing else. */
  const simpleMessage = (tenantId: string, flowId: string) => ({
    tenantId,
    id: newId(),
    flowId,
    flowVersion: 1,
    deliveryId: null,
    topic: null,
    body: 1,
    headers: {},
    query: {},
  });
  /** Accept messages that must all be recorded. */
  const acceptAll = async (batch: Parameters<Store['acceptMessages']>[0]) =>
    (await store.acceptMessages(batch)).map((accepted) => {
      if (!accepted) throw new Error('a message was not recorded: its flow version is not active');
      return accepted;
    });

  it('refuses a second tenant with the same id', async () => {
    await expect(store.createTenant({ id: 'a', name: 'again' })).rejects.toBeInstanceOf(ConflictError);
  });

  it('scopes flows by tenant: the same key in two tenants, invisible to each other', async () => {
    const flowA = await store.createFlow('a', { id: newId(), key: 'shared', name: 'A', draft: doc('shared') });
    const flowB = await store.createFlow('b', { id: newId(), key: 'shared', name: 'B', draft: doc('shared') });
    expect(await store.getFlow('b', flowA.id)).toBeUndefined();
    expect((await store.findFlowByKey('a', 'shared'))?.id).toBe(flowA.id);
    expect((await store.findFlowByKey('b', 'shared'))?.id).toBe(flowB.id);
    expect(await store.deleteFlow('b', flowA.id)).toBe(false);
    await expect(
      store.createFlow('a', { id: newId(), key: 'shared', name: 'dup', draft: doc('shared') }),
    ).rejects.toBeInstanceOf(ConflictError);
  });

  it('replaces a draft only at the current revision', async () => {
    const flow = await store.createFlow('a', { id: newId(), key: 'occ', name: 'occ', draft: doc('occ') });
    const next = await store.replaceDraft('a', flow.id, 1, { ...doc('occ'), name: 'renamed' });
    expect(next.revision).toBe(2);
    expect(next.name).toBe('renamed');
    await expect(store.replaceDraft('a', flow.id, 1, doc('occ'))).rejects.toBeInstanceOf(ConflictError);
    await expect(store.replaceDraft('b', flow.id, 2, doc('occ'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.replaceDraft('a', 'not-a-uuid', 2, doc('occ'))).rejects.toBeInstanceOf(NotFoundError);
  });

  it('publishes immutable, numbered versions and activates the latest', async () => {
    const flow = await store.createFlow('a', { id: newId(), key: 'pub', name: 'pub', draft: doc('pub') });
    expect((await store.publishFlow('a', flow.id, 1, doc('pub'))).version).toBe(1);
    await store.replaceDraft('a', flow.id, 1, { ...doc('pub'), name: 'v2' });
    await expect(store.publishFlow('a', flow.id, 1, doc('pub'))).rejects.toBeInstanceOf(ConflictError);
    const v2 = await store.publishFlow('a', flow.id, 2, { ...doc('pub'), name: 'v2' });
    expect(v2.version).toBe(2);
    const current = await store.getFlow('a', flow.id);
    expect(current).toMatchObject({ activeVersion: 2, latestVersion: 2, active: true });
    expect((await store.getFlowVersion('a', flow.id, 1))?.document.name).toBe('pub');
    expect(await store.getFlowVersion('b', flow.id, 1)).toBeUndefined();
    const versions = await store.listFlowVersions('a', flow.id, { first: 1 });
    expect(versions.nodes.map((v) => v.version)).toEqual([2]);
    const rest = await store.listFlowVersions('a', flow.id, { first: 1, after: versions.pageInfo.endCursor! });
    expect(rest.nodes.map((v) => v.version)).toEqual([1]);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    expect((await store.setFlowActive('a', flow.id, false)).active).toBe(false);
  });

  it('pages lists with opaque cursors and rejects forged ones', async () => {
    for (const name of ['V1', 'V2', 'V3']) await store.putVariable('a', name, { n: name });
    const first = await store.listVariables('a', { first: 2 });
    expect(first.nodes.map((v) => v.name)).toEqual(['V1', 'V2']);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = await store.listVariables('a', { first: 2, after: first.pageInfo.endCursor! });
    expect(second.nodes.map((v) => v.name)).toEqual(['V3']);
    expect(second.pageInfo.hasNextPage).toBe(false);
    expect((await store.listVariables('b', { first: 10 })).nodes).toEqual([]);
    await expect(
      store.listRuns('a', {}, { first: 5, after: Buffer.from('nope').toString('base64url') }),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('reports whether a put created or replaced, and keeps JSON values as JSON', async () => {
    expect((await store.putVariable('a', 'J', [1, { x: null }])).created).toBe(true);
    const replaced = await store.putVariable('a', 'J', 'text');
    expect(replaced.created).toBe(false);
    expect(replaced.variable.value).toBe('text');
  });

  it('keeps sealed secrets per tenant and lists them without ciphertext', async () => {
    await store.putSecret('a', 'TOKEN', { keyId: 'k', ciphertext: 'iv.body', fingerprint: 'fp' });
    const listed = await store.listSecrets('a', { first: 10 });
    expect(listed.nodes).toEqual([expect.objectContaining({ name: 'TOKEN', keyId: 'k', fingerprint: 'fp' })]);
    expect(JSON.stringify(listed)).not.toContain('iv.body');
    expect(await store.sealedSecrets('a', ['TOKEN', 'MISSING'])).toEqual([
      { name: 'TOKEN', keyId: 'k', ciphertext: 'iv.body', fingerprint: 'fp' },
    ]);
    expect(await store.sealedSecrets('b', ['TOKEN'])).toEqual([]);
  });

  it('accepts a delivery id once per flow, answering repeats with the first message, also in one batch', async () => {
    const flows = { a: await publishedFlow('a', 'dedupe'), b: await publishedFlow('b', 'dedupe') };
    const message = (tenantId: 'a' | 'b', deliveryId: string | null) => ({
      message: {
        tenantId,
        id: newId(),
        flowId: flows[tenantId].id,
        flowVersion: 1,
        deliveryId,
        topic: null,
        body: { n: 1 },
        headers: {},
        query: {},
      },
      runId: newId(),
    });
    const [first, sameBatch, other, anonymous] = await acceptAll([
      message('a', 'd-1'),
      message('a', 'd-1'),
      message('b', 'd-1'),
      message('a', null),
    ]);
    expect(first.duplicate).toBe(false);
    expect(sameBatch).toMatchObject({ duplicate: true, messageId: first.messageId, run: { id: first.run.id } });
    expect(other.duplicate).toBe(false);
    expect(anonymous.duplicate).toBe(false);
    const [later] = await acceptAll([message('a', 'd-1')]);
    expect(later).toMatchObject({
      duplicate: true,
      messageId: first.messageId,
      run: { id: first.run.id, status: 'queued' },
    });
  });

  it("records new messages for a flow's active version only, whatever the caller resolved before", async () => {
    const flow = await publishedFlow('a', 'live');
    const message = (flowId: string, flowVersion: number, deliveryId: string | null = null) => ({
      message: {
        tenantId: 'a',
        id: newId(),
        flowId,
        flowVersion,
        deliveryId,
        topic: null,
        body: 1,
        headers: {},
        query: {},
      },
      runId: newId(),
    });
    const [delivered] = await acceptAll([message(flow.id, 1, 'once')]);
    await store.publishFlow('a', flow.id, undefined, doc('live'));
    const [replaced, current, repeated] = await store.acceptMessages([
      message(flow.id, 1),
      message(flow.id, 2),
      message(flow.id, 1, 'once'),
    ]);
    expect(replaced).toBeUndefined();
    expect(current?.run).toMatchObject({ flowVersion: 2, status: 'queued' });
    // The same delivery, the same answer: the first message's run.
    expect(repeated).toMatchObject({ duplicate: true, run: { id: delivered.run.id } });
    await store.setFlowActive('a', flow.id, false);
    expect(await store.acceptMessages([message(flow.id, 2), message(flow.id, 2, 'new')])).toEqual([
      undefined,
      undefined,
    ]);
    await store.setFlowActive('a', flow.id, true);
    await store.deleteFlow('a', flow.id);
    expect(await store.acceptMessages([message(flow.id, 2)])).toEqual([undefined]);
    expect((await store.listMessages('a', { flowId: flow.id }, { first: 10 }, 0)).nodes).toHaveLength(3);
  });

  it('never changes a finished run, and counts attempts', async () => {
    const flow = await publishedFlow('a', 'runs');
    const [{ run }] = await acceptAll([
      {
        message: {
          tenantId: 'a',
          id: newId(),
          flowId: flow.id,
          flowVersion: 1,
          deliveryId: null,
          topic: null,
          body: null,
          headers: {},
          query: {},
        },
        runId: newId(),
      },
    ]);
    expect((await store.beginRun('a', run.id))?.run).toMatchObject({ status: 'running', attempts: 1 });
    const now = new Date().toISOString();
    const step = {
      runId: run.id,
      key: 'a',
      nodeId: 'a',
      status: 'succeeded' as const,
      attempts: 1,
      output: { big: 2 ** 40, none: null },
      error: null,
      startedAt: now,
      finishedAt: now,
    };
    expect(await store.saveProgress('a', run.id, [step])).toBe(false);
    expect(
      await store.saveProgress('a', run.id, [], { status: 'waiting', error: { kind: 'later', message: 'not yet' } }),
    ).toBe(true);
    expect((await store.getRun('a', run.id))?.run).toMatchObject({
      status: 'waiting',
      error: { kind: 'later', message: 'not yet' },
    });
    expect(await store.saveProgress('a', run.id, [], { status: 'succeeded', error: null })).toBe(true);
    expect(
      await store.saveProgress('a', run.id, [], { status: 'failed', error: { kind: 'permanent', message: 'late' } }),
    ).toBe(false);
    const state = await store.beginRun('a', run.id);
    expect(state?.run).toMatchObject({ status: 'succeeded', attempts: 1, error: null });
    expect(state?.run.finishedAt).not.toBeNull();
    expect(state?.steps).toEqual([expect.objectContaining({ key: 'a', output: { big: 2 ** 40, none: null } })]);
    expect(await store.beginRun('b', run.id)).toBeUndefined();
    expect(
      (await store.listRuns('a', { flowId: flow.id, status: 'succeeded' }, { first: 10 })).nodes.map((r) => r.id),
    ).toEqual([run.id]);
    expect((await store.listRuns('b', {}, { first: 10 })).nodes.every((r) => r.tenantId === 'b')).toBe(true);
  });

  it('begins and checkpoints concurrent runs of two tenants together, each with its reads, steps, answer', async () => {
    await store.putVariable('a', 'GROUPED', 'of a');
    await store.putVariable('b', 'GROUPED', 'of b');
    const flows = {
      a: await publishedFlow('a', 'grouped'),
      b: await publishedFlow('b', 'grouped'),
    };
    const accepted = await acceptAll(
      Array.from({ length: 12 }, (_, n) => {
        const tenantId = n % 2 === 0 ? 'a' : 'b';
        return {
          message: {
            tenantId,
            id: newId(),
            flowId: flows[tenantId].id,
            flowVersion: 1,
            deliveryId: null,
            topic: null,
            body: { n },
            headers: {},
            query: {},
          },
          runId: newId(),
        };
      }),
    );
    const runs = accepted.map(({ run }) => run);
    // All at once: they share statements. The last asks for a run of tenant a as tenant b.
    const begun = await Promise.all([
      ...runs.map((run, n) =>
        store.beginRun(run.tenantId, run.id, { vars: n % 3 === 0 ? ['GROUPED'] : [], secrets: [], platform: [] }),
      ),
      store.beginRun('b', runs[0].id),
    ]);
    runs.forEach((run, n) => {
      expect(begun[n]).toMatchObject({
        run: { id: run.id, tenantId: run.tenantId, status: 'running', attempts: 1 },
        message: { body: { n } },
        steps: [],
      });
      expect(begun[n]!.vars).toEqual(n % 3 === 0 ? { GROUPED: `of ${run.tenantId}` } : {});
    });
    expect(begun[runs.length]).toBeUndefined();

    const now = new Date().toISOString();
    const step = (runId: string, key: string, output: unknown) => ({
      runId,
      key,
      nodeId: key,
      status: 'succeeded' as const,
      attempts: 1,
      output,
      error: null,
      startedAt: now,
      finishedAt: now,
    });
    const saved = await Promise.all([
      ...runs.map((run, n) =>
        store.saveProgress(
          run.tenantId,
          run.id,
          ['x', 'y', 'z'].map((key) => step(run.id, key, `${key}${n}`)),
          n < 6 ? { status: 'succeeded', error: null } : undefined,
        ),
      ),
      store.saveProgress('b', runs[2].id, [], { status: 'failed', error: { kind: 'permanent', message: 'not yours' } }),
    ]);
    expect(saved).toEqual([...runs.map((_, n) => n < 6), false]);
    for (const [n, run] of runs.entries()) {
      const stored = await store.getRun(run.tenantId, run.id);
      expect(stored?.run.status).toBe(n < 6 ? 'succeeded' : 'running');
      expect(stored?.steps.map((s) => [s.key, s.output])).toEqual([
        ['x', `x${n}`],
        ['y', `y${n}`],
        ['z', `z${n}`],
      ]);
    }
    await store.deleteVariable('a', 'GROUPED');
    await store.deleteVariable('b', 'GROUPED');
  });

  it('begins a run with exactly the variables and sealed secrets it reads, from its own tenant', async () => {
    const flow = await publishedFlow('b', 'reads');
    await store.putVariable('b', 'WANTED', 1);
    await store.putVariable('b', 'OTHER', 2);
    await store.putSecret('b', 'KEY', { keyId: 'k', ciphertext: 'c', fingerprint: 'f' });
    const accept = async () =>
      (
        await acceptAll([
          {
            message: simpleMessage('b', flow.id),
            runId: newId(),
          },
        ])
      )[0].run;
    const named = await store.beginRun('b', (await accept()).id, {
      vars: ['WANTED', 'V1'],
      secrets: ['KEY'],
      platform: [],
    });
    expect(named?.vars).toEqual({ WANTED: 1 });
    expect(named?.sealedSecrets).toEqual([{ name: 'KEY', keyId: 'k', ciphertext: 'c', fingerprint: 'f' }]);
    expect((await store.beginRun('b', (await accept()).id))?.vars).toEqual({});

    // $platform: the tenant's override wins over the platform's value; only the names read are loaded.
    await store.putPlatformValue({ tenantId: null }, 'ERP_HOST', 'erp.example.com');
    await store.putPlatformValue({ tenantId: null }, 'REGION', 'eu');
    await store.putPlatformValue({ tenantId: null }, 'UNREAD', 1);
    expect((await store.putPlatformValue({ tenantId: 'b' }, 'ERP_HOST', 'erp-b.example.com')).created).toBe(true);
    await store.putPlatformValue({ tenantId: 'b' }, 'ONLY_B', true);
    const platform = await store.beginRun('b', (await accept()).id, {
      vars: [],
      secrets: [],
      platform: ['ERP_HOST', 'REGION', 'ONLY_B', 'MISSING'],
    });
    expect(platform?.platform).toEqual({ ERP_HOST: 'erp-b.example.com', REGION: 'eu', ONLY_B: true });
    const everything = await store.beginRun('b', (await accept()).id, { vars: [], secrets: [], platform: '*' });
    expect(everything?.platform).toMatchObject({ ERP_HOST: 'erp-b.example.com', UNREAD: 1 });
    expect((await store.listPlatformValues({ tenantId: 'b' }, { first: 10 })).nodes.map((value) => value.name)).toEqual(
      ['ERP_HOST', 'ONLY_B'],
    );
    expect(await store.getPlatformValue({ tenantId: 'a' }, 'ERP_HOST')).toBeUndefined();
    expect(await store.deletePlatformValue({ tenantId: 'b' }, 'ERP_HOST')).toBe(true);
    const fallback = await store.beginRun('b', (await accept()).id, { vars: [], secrets: [], platform: ['ERP_HOST'] });
    expect(fallback?.platform).toEqual({ ERP_HOST: 'erp.example.com' });
    expect(await store.deletePlatformValue({ tenantId: null }, 'UNREAD')).toBe(true);
  });

  it('keeps batches: tasks deduplicated by key, seeded checkpoints, counts from runs, failures retried', async () => {
    const flow = await publishedFlow('a', 'batched');
    const [poll] = await acceptAll([
      {
        message: {
          tenantId: 'a',
          id: newId(),
          flowId: flow.id,
          flowVersion: 1,
          deliveryId: null,
          topic: null,
          body: {},
          headers: {},
          query: {},
        },
        runId: newId(),
      },
    ]);
    const batch = await store.createBatch('a', {
      id: newId(),
      flowId: flow.id,
      flowVersion: 1,
      runId: poll.run.id,
      nodeId: 'a',
      windowFrom: null,
      windowTo: '2026-11-21T00:00:00.000Z',
    });
    expect(batch).toMatchObject({
      status: 'importing',
      counts: { total: 0, progress: 100 },
      windowTo: '2026-11-21T00:00:00.000Z',
    });
    const task = (key: string) => ({ key, item: { order: key }, messageId: newId(), runId: newId() });
    const first = await store.addBatchTasks('a', batch.id, [task('o1'), task('o2')]);
    expect(first.map((run) => run.batchId)).toEqual([batch.id, batch.id]);
    // A repeated key adds nothing new; a task still queued is handed back to be queued again.
    const again = await store.addBatchTasks('a', batch.id, [task('o1'), task('o3')]);
    expect(again.map((run) => run.id).sort()).toEqual(
      [first[0].id, again.find((run) => run.id !== first[0].id)!.id].sort(),
    );
    expect((await store.getRun('a', first[0].id))!.steps).toEqual([
      expect.objectContaining({ key: 'a', status: 'succeeded', output: { order: 'o1' } }),
    ]);
    expect(await store.getBatch('b', batch.id)).toBeUndefined();

    await store.saveProgress('a', first[0].id, [], { status: 'succeeded', error: null });
    await store.saveProgress('a', first[1].id, [], { status: 'failed', error: { kind: 'permanent', message: 'no' } });
    expect((await store.getBatch('a', batch.id))!.counts).toEqual({
      total: 3,
      unfinished: 1,
      succeeded: 1,
      failed: 1,
      skipped: 0,
      progress: 66.7,
    });
    const retried = await store.retryFailedTasks('a', batch.id, newId, 10);
    expect(retried.runs).toHaveLength(1);
    expect(retried.more).toBe(false);
    expect((await store.getRun('a', retried.runs[0].id))!.steps).toEqual([
      expect.objectContaining({ key: 'a', output: { order: 'o2' } }),
    ]);
    const tasks = await store.listBatchTasks('a', batch.id, {}, { first: 2 });
    expect(tasks.nodes.map((entry) => [entry.key, entry.status, entry.retries])).toEqual([
      ['o1', 'succeeded', 0],
      ['o2', 'queued', 1],
    ]);
    expect(
      (await store.listBatchTasks('a', batch.id, {}, { first: 2, after: tasks.pageInfo.endCursor! })).nodes.map(
        (entry) => entry.key,
      ),
    ).toEqual(['o3']);
    await store.setBatchStatus('a', batch.id, 'succeeded');
    expect((await store.listBatches('a', { flowId: flow.id }, { first: 10 })).nodes).toEqual([
      expect.objectContaining({ id: batch.id, status: 'succeeded', finishedAt: expect.any(String) }),
    ]);
    expect(await store.hasUnfinishedRun('a', flow.id)).toBe(true);
  });

  it('keeps incremental fields per flow, moving movedAt only when the value changes', async () => {
    const flowId = newId();
    const set = await store.putIncrementalField('a', flowId, {
      field: 'updated_at',
      value: '2026-11-01T00:00:00.000Z',
      overlapMs: 300_000,
    });
    expect(set).toMatchObject({
      flowId,
      value: '2026-11-01T00:00:00.000Z',
      movedAt: expect.any(String),
      overlapMs: 300_000,
    });
    const same = await store.putIncrementalField('a', flowId, {
      field: 'updated_at',
      value: '2026-11-01T00:00:00.000Z',
      overlapMs: 60_000,
    });
    expect(same.movedAt).toBe(set.movedAt);
    expect(await store.getIncrementalField('b', flowId)).toBeUndefined();
    expect((await store.listIncrementalFields('a', { first: 10 })).nodes).toEqual([
      expect.objectContaining({ flowId, overlapMs: 60_000 }),
    ]);
    expect(await store.deleteIncrementalField('a', flowId)).toBe(true);
    expect(await store.getIncrementalField('a', flowId)).toBeUndefined();
  });

  it('holds runs of a suspended tenant or blocked topic, releases them in arrival order or discards them', async () => {
    await store.createTenant({ id: 'held', name: 'Held' });
    const flow = await publishedFlow('held', 'topics');
    const deliver = async (topic: string | null, deliveryId: string | null = null) =>
      (
        await acceptAll([
          {
            message: {
              tenantId: 'held',
              id: newId(),
              flowId: flow.id,
              flowVersion: 1,
              deliveryId,
              topic,
              body: { topic },
              headers: {},
              query: {},
            },
            runId: newId(),
          },
        ])
      )[0];

    expect((await store.blockTopic('held', 'refunds/create', 'ERP migration')).created).toBe(true);
    expect((await store.blockTopic('held', 'refunds/create', 'still migrating')).created).toBe(false);
    const first = await deliver('refunds/create', 'w-1');
    const open = await deliver('orders/create');
    expect(first.run).toMatchObject({ status: 'held', heldBy: 'topic' });
    expect(open.run).toMatchObject({ status: 'queued', heldBy: null });
    expect(await store.setTenantStatus('held', 'suspended', 'unpaid invoice')).toMatchObject({
      status: 'suspended',
      suspendedReason: 'unpaid invoice',
      suspendedAt: expect.any(String),
      limits: {},
    });
    expect((await store.setTenantLimits('held', { weight: 3, maxQueuedRuns: 0 }))?.limits).toEqual({
      weight: 3,
      maxQueuedRuns: 0,
    });
    expect((await store.getTenant('held'))?.limits).toEqual({ weight: 3, maxQueuedRuns: 0 });
    expect(await store.setTenantLimits('nobody', {})).toBeUndefined();
    const whileSuspended = await deliver('orders/create');
    const second = await deliver('refunds/create');
    expect([whileSuspended.run.heldBy, second.run.heldBy]).toEqual(['suspended', 'suspended']);
    // A repeated delivery is recorded, pointing at the first, and runs nothing.
    const repeat = await deliver('refunds/create', 'w-1');
    expect(repeat).toMatchObject({ duplicate: true, messageId: first.messageId, run: { id: first.run.id } });

    expect((await store.listBlockedTopics('held', { first: 10 })).nodes).toEqual([
      { topic: 'refunds/create', reason: 'still migrating', blockedAt: expect.any(String), held: 2 },
    ]);
    const statuses = (await store.listMessages('held', {}, { first: 10 }, 1000)).nodes.map((message) => [
      message.topic,
      message.status,
    ]);
    expect(statuses).toEqual([
      ['refunds/create', 'duplicate'],
      ['refunds/create', 'blocked'],
      ['orders/create', 'blocked'],
      ['orders/create', 'accepted'],
      ['refunds/create', 'blocked'],
    ]);
    expect((await store.listMessages('held', { status: 'duplicate' }, { first: 10 }, 1000)).nodes).toEqual([
      expect.objectContaining({ duplicateOf: first.messageId, deliveryId: null, body: null }),
    ]);

    // Resuming releases what the suspension held, except what the blocked topic still holds.
    await store.setTenantStatus('held', 'active', null);
    const page = { limit: 10 };
    expect((await store.releaseHeld('held', { heldBy: 'suspended' }, page)).released.map((run) => run.id)).toEqual([
      whileSuspended.run.id,
    ]);
    expect((await store.getRun('held', second.run.id))?.run).toMatchObject({ status: 'held', heldBy: 'topic' });
    // Still blocked: a release changes nothing.
    expect(await store.releaseHeld('held', { topic: 'refunds/create' }, page)).toEqual({ released: [] });
    expect(await store.unblockTopic('held', 'refunds/create')).toBe(true);
    expect(await store.unblockTopic('held', 'refunds/create')).toBe(false);
    expect(await store.discardHeld('held', { topic: 'orders/create' }, 'nothing held', 10)).toBe(0);
    // One page at a time, in arrival order: `last` says where the next one starts.
    const firstPage = await store.releaseHeld('held', { topic: 'refunds/create' }, { limit: 1 });
    expect(firstPage).toEqual({ released: [expect.objectContaining({ id: first.run.id })], last: first.run.id });
    const secondPage = await store.releaseHeld(
      'held',
      { topic: 'refunds/create' },
      { after: firstPage.last, limit: 1 },
    );
    expect(secondPage.released.map((run) => run.id)).toEqual([second.run.id]);
    expect(await store.releaseHeld('held', { topic: 'refunds/create' }, { after: secondPage.last, limit: 1 })).toEqual({
      released: [],
    });

    await store.blockTopic('held', 'refunds/create', null);
    const third = await deliver('refunds/create');
    const fourth = await deliver('refunds/create');
    expect(await store.discardHeld('held', { topic: 'refunds/create' }, 'discarded when unblocked', 1)).toBe(1);
    expect(await store.discardHeld('held', { topic: 'refunds/create' }, 'discarded when unblocked', 1)).toBe(1);
    expect((await store.getRun('held', fourth.run.id))?.run.status).toBe('cancelled');
    expect((await store.getRun('held', third.run.id))?.run).toMatchObject({
      status: 'cancelled',
      heldBy: null,
      error: { kind: 'permanent', message: 'discarded when unblocked' },
    });
    expect((await store.getMessage('held', third.messageId, 1000))?.message.status).toBe('cancelled');
    expect(await store.getMessage('a', third.messageId, 1000)).toBeUndefined();
    expect((await store.listTenants({ status: 'active' }, { first: 100 })).nodes.map((tenant) => tenant.id)).toEqual([
      'a',
      'b',
      'held',
    ]);
  });

  it("replays a message on the flow's active version, only when its last run has finished", async () => {
    const flow = await publishedFlow('a', 'replay');
    const [accepted] = await acceptAll([
      {
        message: {
          tenantId: 'a',
          id: newId(),
          flowId: flow.id,
          flowVersion: 1,
          deliveryId: 'r-1',
          topic: null,
          body: { big: 'x'.repeat(100) },
          headers: {},
          query: {},
        },
        runId: newId(),
      },
    ]);
    await expect(store.replayMessage('a', accepted.messageId, newId())).rejects.toBeInstanceOf(ConflictError);
    await store.saveProgress('a', accepted.run.id, [], {
      status: 'failed',
      error: { kind: 'permanent', message: 'ERP down' },
    });
    await store.publishFlow('a', flow.id, undefined, doc('replay'));
    const replayed = await store.replayMessage('a', accepted.messageId, newId());
    expect(replayed).toMatchObject({ messageId: accepted.messageId, status: 'queued', flowVersion: 2 });
    await expect(store.replayMessage('b', accepted.messageId, newId())).rejects.toBeInstanceOf(NotFoundError);
    const found = await store.getMessage('a', accepted.messageId, 50);
    expect(found?.message).toMatchObject({
      status: 'accepted',
      runId: replayed.id,
      body: null,
      bodyTruncated: true,
      bodyBytes: 111,
    });
    expect(found?.runs.map((run) => run.id)).toEqual([accepted.run.id, replayed.id]);
  });

  it('sums runs per bucket, flow and status, with percentiles of finished ones', async () => {
    await store.createTenant({ id: 'stats', name: 'Stats' });
    const flow = await publishedFlow('stats', 'stats');
    const accepted = await acceptAll(
      [1, 2, 3].map((n) => ({
        message: {
          tenantId: 'stats',
          id: newId(),
          flowId: flow.id,
          flowVersion: 1,
          deliveryId: null,
          topic: 't',
          body: n,
          headers: {},
          query: {},
        },
        runId: newId(),
      })),
    );
    await store.beginRun('stats', accepted[0].run.id);
    await store.saveProgress('stats', accepted[0].run.id, [], { status: 'succeeded', error: null });
    await store.saveProgress('stats', accepted[1].run.id, [], {
      status: 'failed',
      error: { kind: 'permanent', message: 'no' },
    });
    const now = Date.now();
    const stats = await store.statistics('stats', {
      from: new Date(now - 3600_000).toISOString(),
      to: new Date(now + 60_000).toISOString(),
      interval: 'day',
    });
    expect(stats.runs).toEqual([
      {
        bucket: expect.stringMatching(/T00:00:00.000Z$/),
        flowId: flow.id,
        total: 3,
        counts: { queued: 1, succeeded: 1, failed: 1 },
        durationMs: { p50: expect.any(Number), p95: expect.any(Number), p99: expect.any(Number) },
        latencyMs: expect.objectContaining({ p50: expect.any(Number) }),
      },
    ]);
    expect(stats.messages).toEqual([expect.objectContaining({ topic: 't', count: 3, duplicates: 0 })]);
    expect(
      (
        await store.statistics('stats', {
          from: new Date(now + 2 * 3600_000).toISOString(),
          to: new Date(now + 3 * 3600_000).toISOString(),
          interval: 'hour',
        })
      ).runs,
    ).toEqual([]);
    const other = await store.statistics('b', {
      from: new Date(now - 3600_000).toISOString(),
      to: new Date(now + 60_000).toISOString(),
      interval: 'hour',
    });
    expect(other.runs.some((row) => row.flowId === flow.id)).toBe(false);
  });

  it('keeps at most the per-run limit of log lines, filters by level and text, prunes them by age', async () => {
    const runId = newId();
    const flowId = newId();
    const line = (n: number, level: 'info' | 'warn') => ({
      nodeId: 'n',
      level,
      message: `line ${n}`,
      data: { n },
      loggedAt: new Date(Date.now() - (n === 0 ? 86_400_000 : 0)).toISOString(),
    });
    await store.saveProgress('a', runId, [], undefined, {
      flowId,
      lines: [line(0, 'warn'), ...Array.from({ length: 7 }, (_, i) => line(i + 1, 'info'))],
      perRunLimit: 5,
    });
    await store.saveProgress('a', runId, [], undefined, { flowId, lines: [line(9, 'warn')], perRunLimit: 5 });
    const kept = await store.listRunLogs('a', { runId }, { first: 10 });
    expect(kept.nodes.map((entry) => entry.message)).toEqual(['line 4', 'line 3', 'line 2', 'line 1', 'line 0']);
    expect(
      (await store.listRunLogs('a', { runId, level: 'warn' }, { first: 10 })).nodes.map((entry) => entry.data),
    ).toEqual([{ n: 0 }]);
    expect((await store.listRunLogs('a', { text: 'LINE 3' }, { first: 10 })).nodes).toHaveLength(1);
    expect((await store.listRunLogs('b', { runId }, { first: 10 })).nodes).toEqual([]);
    expect(await store.pruneRunLogs(new Date(Date.now() - 3_600_000).toISOString())).toBe(1);
    expect((await store.listRunLogs('a', { runId }, { first: 10 })).nodes).toHaveLength(4);
  });

  it("lists one tenant's unfinished runs, oldest first, and keeps where an operator moved its runs", async () => {
    await store.createTenant({ id: 'placed', name: 'Placed' });
    await store.createEnvironment('placed', 'staging');
    const staging = environmentId('placed', 'staging');
    const flow = await publishedFlow('placed', 'placed');
    const runs = (
      await acceptAll(Array.from({ length: 3 }, () => ({ message: simpleMessage('placed', flow.id), runId: newId() })))
    ).map(({ run }) => run.id);
    await acceptAll([{ message: simpleMessage('b', (await publishedFlow('b', 'placed')).id), runId: newId() }]);
    await store.saveProgress('placed', runs[1], [], { status: 'succeeded', error: null });
    const later = new Date(Date.now() + 60_000).toISOString();
    const unfinished = await store.listUnfinishedRuns(later, undefined, 10, 'placed');
    expect(unfinished.map((run) => run.id)).toEqual([runs[0], runs[2]]);
    expect(unfinished.every((run) => run.tenantId === 'placed')).toBe(true);
    expect((await store.listUnfinishedRuns(later, unfinished[0], 10, 'placed')).map((run) => run.id)).toEqual([
      runs[2],
    ]);

    const moving = { tenantId: staging, group: 2, movingFrom: 0, since: new Date().toISOString(), draining: false };
    await store.saveRunPlacement(moving);
    await store.saveRunPlacement({ tenantId: 'placed', group: 1, movingFrom: null, since: null, draining: false });
    await store.saveRunPlacement({ ...moving, draining: true });
    expect(await store.listRunPlacements()).toEqual([
      { tenantId: 'placed', group: 1, movingFrom: null, since: null, draining: false },
      { ...moving, draining: true },
    ]);
    await expect(
      store.saveRunPlacement({ tenantId: 'nobody', group: 1, movingFrom: null, since: null, draining: false }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await store.deleteTenant('placed');
    expect(await store.listRunPlacements()).toEqual([]);
  });

  it('deletes a tenant with everything it owns, its environments and their runs’ steps too', async () => {
    const runIds = { gone: newId(), [environmentId('gone', 'staging')]: newId() };
    /** The tenant and its environment, each with a run; one that checkpointed a step when `checkpoint`. */
    const populate = async (checkpoint: boolean) => {
      await store.createTenant({ id: 'gone', name: 'Gone' });
      await store.createEnvironment('gone', 'staging');
      const flows: Record<string, string> = {};
      for (const [tenantId, runId] of Object.entries(runIds)) {
        const flow = await publishedFlow(tenantId, 'gone');
        flows[tenantId] = flow.id;
        await acceptAll([
          {
            message: simpleMessage(tenantId, flow.id),
            runId,
          },
        ]);
        if (!checkpoint) continue;
        await store.beginRun(tenantId, runId);
        const at = new Date().toISOString();
        await store.saveProgress(tenantId, runId, [
          {
            runId,
            key: 'map',
            nodeId: 'map',
            status: 'succeeded',
            attempts: 1,
            output: 1,
            error: null,
            startedAt: at,
            finishedAt: at,
          },
        ]);
      }
      return flows;
    };
    const flows = await populate(true);
    for (const [tenantId, runId] of Object.entries(runIds))
      expect((await store.getRun(tenantId, runId))?.steps.map((step) => step.key)).toEqual(['map']);
    await store.blockTopic('gone', 'x', null);
    expect(await store.deleteTenant(environmentId('gone', 'staging'))).toBe(false);
    expect(await store.deleteTenant('gone')).toBe(true);
    expect(await store.getTenant('gone')).toBeUndefined();
    expect(await store.getFlow('gone', flows.gone)).toBeUndefined();
    expect((await store.listMessages('gone', {}, { first: 10 }, 10)).nodes).toEqual([]);
    expect(await store.deleteTenant('gone')).toBe(false);
    // Made again under the same ids, a run given the same id as before starts with no step: none was left behind.
    await populate(false);
    for (const [tenantId, runId] of Object.entries(runIds))
      expect((await store.getRun(tenantId, runId))?.steps).toEqual([]);
    await store.deleteTenant('gone');
  });
});
