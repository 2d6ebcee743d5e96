import { randomBytes } from 'node:crypto';
import { QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DISPATCH_TTL_MS } from '../engine/queue/heartbeats.ts';
import { RunLanes, type LaneRun } from '../engine/queue/run-lanes.ts';
import { REDIS_URL } from './support/harness.ts';

// The lanes against a real Redis: what they hand out, in which order, and when they hold back.
const redis = new Redis(REDIS_URL);
let prefix: string;

const run = (tenantId: string, n: number, flowId = 'flow'): LaneRun => ({
  tenantId,
  flowId,
  runId: `${tenantId}-${flowId}-${n}`,
  flowVersion: 1,
});
const runs = (tenantId: string, count: number, flowId = 'flow') =>
  Array.from({ length: count }, (_, n) => run(tenantId, n, flowId));
const ids = (handed: LaneRun[]) => handed.map((item) => item.runId);
/** Runs pushed: those handed out at once. */
const push = async (subject: RunLanes, items: LaneRun[]) => (await subject.push(items)).now;

/**
 * Lanes over this test's keys; `takes` is what one live worker takes (its slots and prefetch), `executes` its
 * concurrency (its slots alone) when it says so.
 */
async function lanes(
  takes: number,
  tenantConcurrency = 0,
  leaseMs = 30_000,
  reservedSlotsPercent = 0,
  executes?: number,
) {
  await redis.zadd(`${prefix}:workers`, Date.now(), 'worker');
  await redis.hset(`${prefix}:slots`, 'worker', takes);
  if (executes !== undefined) await redis.hset(`${prefix}:slots`, 'worker:c', executes);
  // The keys BullMQ gives the `runs` queue under this prefix, from BullMQ itself.
  const names = new QueueKeys(prefix);
  const queue = { keys: names.getKeys('runs'), toKey: (type: string) => names.toKey('runs', type) };
  return new RunLanes(async () => redis, {
    queue,
    workersKey: `${prefix}:workers`,
    workerSlotsKey: `${prefix}:slots`,
    leaseMs,
    tenantConcurrency,
    reservedSlotsPercent,
  });
}

/**
 * What BullMQ does with handed-out runs, as far as the lanes see it: their jobs are active and locked, the hand-off
 * confirmed.
 */
async function started(subject: RunLanes, handed: LaneRun[]): Promise<LaneRun[]> {
  for (const item of handed) {
    await redis.rpush(`${prefix}:runs:active`, item.runId);
    await redis.set(`${prefix}:runs:${item.runId}:lock`, 'token');
  }
  subject.confirm(ids(handed));
  return handed;
}

/** Jobs leave the active list (finished, or delayed), and their locks go. */
async function leave(ended: LaneRun[]) {
  for (const item of ended) {
    await redis.lrem(`${prefix}:runs:active`, 0, item.runId);
    await redis.del(`${prefix}:runs:${item.runId}:lock`);
  }
}

/** Runs end: released while their jobs are still active (as a worker does), then their jobs leave. */
async function end(subject: RunLanes, ended: LaneRun[]): Promise<LaneRun[]> {
  const next = await subject.release(ended);
  await leave(ended);
  return started(subject, next);
}

/** Start runs until `count` have started, ending the oldest running one each time (one worker slot). */
async function drain(subject: RunLanes, count: number): Promise<LaneRun[]> {
  const handed = await started(subject, await subject.dispatch());
  while (handed.length < count) {
    const next = await end(subject, [handed[handed.length - 1]]);
    if (next.length === 0) break;
    handed.push(...next);
  }
  return handed;
}

beforeEach(() => {
  prefix = `test-lanes-${randomBytes(4).toString('hex')}`;
});
afterEach(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
});
afterAll(() => redis.disconnect());

describe('fair dispatch', () => {
  it('keeps the reserved slots for tenants running few runs: a newcomer starts at once while another holds the rest', async () => {
    // 20 slots, 10 % reserved: a tenant running 2 or more takes at most 18.
    const subject = await lanes(20, 0, 30_000, 10);
    const busy = await started(subject, await push(subject, runs('busy', 100)));
    expect(busy).toHaveLength(18);
    expect(await subject.dispatch()).toEqual([]);
    // A tenant with nothing running starts at once, on a reserved slot, and may take the other too.
    const quiet = await started(subject, await push(subject, [run('quiet', 0), run('quiet', 1), run('quiet', 2)]));
    expect(ids(quiet)).toEqual(['quiet-flow-0', 'quiet-flow-1']);
    // Then it runs as many as are reserved: the slot a busy run frees is kept for the next newcomer.
    expect(await subject.dispatch()).toEqual([]);
    expect(await end(subject, [busy[0]])).toEqual([]);
    // Below that again, it goes on.
    expect(ids(await end(subject, [quiet[0]]))).toEqual(['quiet-flow-2']);
    expect(await subject.backlog()).toEqual({ busy: 82 });
  });

  it("keeps the reserved slots free to execute: a newcomer never waits behind a busy tenant's runs taken ahead", async () => {
    // One worker executing 20 runs at once and taking 4 more ahead, 10 % reserved: runs queued ahead of the
    // workers count as holding a slot, so the busy tenant holds 18 and 2 slots stay free to execute.
    const subject = await lanes(24, 0, 30_000, 10, 20);
    const busy = await started(subject, await push(subject, runs('busy', 100)));
    expect(busy).toHaveLength(18);
    expect(await subject.dispatch()).toEqual([]);
    const quiet = await started(subject, await push(subject, [run('quiet', 0)]));
    expect(ids(quiet)).toEqual(['quiet-flow-0']);
    // Alone again, the busy tenant still leaves them free: the next newcomer may come while its runs hang.
    await end(subject, quiet);
    expect(await subject.dispatch()).toEqual([]);
    // A busy run back without a dispatch (a takeover after a crash, a retry's wait) is deferred, not leased; a
    // quiet tenant's is leased.
    expect(await subject.acquire([run('busy', 99)], true)).toEqual(['busy-flow-99']);
    expect(await subject.acquire([run('quiet', 9)], true)).toEqual([]);
    // Deferred often enough, it is leased whatever its tenant holds.
    expect(await subject.acquire([run('busy', 99)], false)).toEqual([]);
  });

  it('with no slots reserved, lets a tenant alone have a few runs queued ahead of the slots', async () => {
    // One worker executing 20 runs at once and taking 4 more ahead, none reserved.
    const subject = await lanes(24, 0, 30_000, 0, 20);
    expect(await started(subject, await push(subject, runs('busy', 100)))).toHaveLength(24);
  });

  it('counts runs handed out a moment ago, their jobs not yet added, as taking slots', async () => {
    const subject = await lanes(24, 0, 30_000, 10, 20);
    expect(await push(subject, runs('busy', 100))).toHaveLength(18);
    // A call from another process before their jobs are added: the slots they will take are not free for busy.
    expect(await subject.dispatch()).toEqual([]);
    expect(ids(await push(subject, [run('quiet', 0)]))).toEqual(['quiet-flow-0']);
  });

  it.each([
    [
      "a dead worker's runs, listed active until its stalled check hands them back",
      (runIds: string[]) => redis.rpush(`${prefix}:runs:active`, ...runIds),
    ],
    [
      "runs back from a wait, in BullMQ's prioritized set, which workers read after the wait list",
      (runIds: string[]) => redis.zadd(`${prefix}:runs:prioritized`, ...runIds.flatMap((id, n) => [n, id])),
    ],
  ])('starts a newcomer while the queue looks full of %s', async (_, crowd) => {
    const subject = await lanes(24, 0, 30_000, 10, 20);
    await started(subject, await push(subject, runs('busy', 100)));
    await crowd(Array.from({ length: 20 }, (_, n) => `crowd-${n}`));
    expect(await subject.dispatch()).toEqual([]);
    expect(ids(await push(subject, [run('quiet', 0), run('quiet', 1), run('quiet', 2)]))).toEqual([
      'quiet-flow-0',
      'quiet-flow-1',
    ]);
  });

  it("hands out only what live workers take, then one run per run ended; a tenant's first run goes next", async () => {
    const subject = await lanes(2);
    const first = await started(subject, await push(subject, runs('busy', 50)));
    expect(ids(first)).toEqual(['busy-flow-0', 'busy-flow-1']);
    // Nothing more while the workers are full, however many runs wait.
    expect(await push(subject, [run('quiet', 0)])).toEqual([]);
    expect(await subject.dispatch()).toEqual([]);
    // The first run to end makes room for one, and it is the quiet tenant's, ahead of the busy backlog.
    expect(ids(await end(subject, [first[0]]))).toEqual(['quiet-flow-0']);
    expect(ids(await end(subject, [first[1]]))).toEqual(['busy-flow-2']);
    expect(await subject.backlog()).toEqual({ busy: 47 });
  });

  it('frees the slot of a run once, when its job left the active list before its release came', async () => {
    const subject = await lanes(4);
    const first = await started(subject, await push(subject, runs('busy', 10)));
    // Two passes end to wait, their jobs delayed at once, while the release waits for another call to end.
    const sleeping = first.slice(0, 2).map((item) => ({ ...item, heldUntil: Date.now() + 1000 }));
    await leave(sleeping);
    expect(ids(await subject.release(sleeping))).toEqual(['busy-flow-4', 'busy-flow-5']);
  });

  it('counts runs back from a wait as queued: runs handed out after them do not crowd them out', async () => {
    const subject = await lanes(4);
    const first = await started(subject, await push(subject, runs('busy', 10)));
    // Their passes end to wait, and the next runs take their slots.
    const sleeping = first.map((item) => ({ ...item, heldUntil: Date.now() + 1000 }));
    const second = await end(subject, sleeping);
    expect(ids(second)).toEqual(['busy-flow-4', 'busy-flow-5', 'busy-flow-6', 'busy-flow-7']);
    // The first are back: their jobs are in BullMQ's prioritized set (run-worker.ts), taken once the wait list is
    // empty. They take the slots the second free as much as runs handed out would.
    await redis.zadd(`${prefix}:runs:prioritized`, ...ids(first).flatMap((id, n) => [n, id]));
    expect(await end(subject, second)).toEqual([]);
    // A worker takes two of them, and those end: room for two.
    await redis.zpopmin(`${prefix}:runs:prioritized`, 2);
    const taken = await started(subject, first.slice(0, 2));
    expect(await subject.dispatch()).toEqual([]);
    expect(ids(await end(subject, taken))).toEqual(['busy-flow-8', 'busy-flow-9']);
  });

  it('fills the slots of workers that beat within DISPATCH_TTL_MS, not those of a worker that stopped', async () => {
    const subject = await lanes(2);
    // A worker killed two beats ago still counts; one whose last beat is older does not.
    await redis.zadd(`${prefix}:workers`, Date.now() - DISPATCH_TTL_MS + 1000, 'killed');
    await redis.hset(`${prefix}:slots`, 'killed', 3);
    const first = await started(subject, await push(subject, runs('a', 10)));
    expect(first).toHaveLength(5);
    await redis.zadd(`${prefix}:workers`, Date.now() - DISPATCH_TTL_MS - 1000, 'killed');
    expect(await end(subject, first)).toHaveLength(2);
  });

  it('hands out nothing while no worker is live, nor while the queue is paused', async () => {
    const subject = await lanes(4);
    await redis.zadd(`${prefix}:workers`, Date.now() - 60_000, 'worker');
    expect(await push(subject, runs('a', 3))).toEqual([]);
    await redis.zadd(`${prefix}:workers`, Date.now(), 'worker');
    await redis.hset(`${prefix}:runs:meta`, 'paused', 1);
    expect(await subject.dispatch()).toEqual([]);
    await redis.hdel(`${prefix}:runs:meta`, 'paused');
    expect(ids(await subject.dispatch())).toEqual(['a-flow-0', 'a-flow-1', 'a-flow-2']);
  });

  it('serves backlogged tenants in turn, by weight, each in arrival order', async () => {
    const subject = await lanes(1);
    await redis.hset(`${prefix}:runs:fair:weight`, 'heavy', 3);
    // Both tenants backlogged before any run starts.
    await redis.hset(`${prefix}:slots`, 'worker', 0);
    await push(subject, [...runs('heavy', 40), ...runs('light', 40)]);
    await redis.hset(`${prefix}:slots`, 'worker', 1);
    const handed = await drain(subject, 40);
    const heavy = handed.filter((item) => item.tenantId === 'heavy');
    expect(heavy.length).toBeGreaterThanOrEqual(29);
    expect(heavy.length).toBeLessThanOrEqual(31);
    // Within a tenant and flow, first in, first out.
    expect(ids(heavy)).toEqual(ids(runs('heavy', heavy.length)));
  });

  it("serves a tenant's flows in turn: its flood on one flow does not hold its other flows", async () => {
    const subject = await lanes(0);
    await push(subject, [...runs('t', 10, 'flood'), run('t', 0, 'single')]);
    await redis.hset(`${prefix}:slots`, 'worker', 1);
    const firstThree = await drain(subject, 3);
    expect(ids(firstThree)).toContain('t-single-0');
  });

  it('keeps a tenant to its concurrency, and hands out its next run as soon as one ends', async () => {
    const subject = await lanes(10, 2);
    const first = await started(subject, await push(subject, [...runs('limited', 5), ...runs('other', 2)]));
    expect(first.filter((item) => item.tenantId === 'limited')).toHaveLength(2);
    expect(first.filter((item) => item.tenantId === 'other')).toHaveLength(2);
    // No run of the tenant is handed out (nor delayed and retried) until one of its runs ends.
    expect(await subject.dispatch()).toEqual([]);
    expect(ids(await end(subject, [run('limited', 0)]))).toEqual(['limited-flow-2']);
  });

  it("keeps a flow to its concurrency without holding the tenant's other flows", async () => {
    const subject = await lanes(10);
    await redis.hset(`${prefix}:runs:fair:flow-limit`, 't:serial', 1);
    const handed = await push(subject, [...runs('t', 3, 'serial'), ...runs('t', 2, 'free')]);
    expect(ids(handed).sort()).toEqual(['t-free-0', 't-free-1', 't-serial-0']);
    expect(await subject.dispatch()).toEqual([]);
    expect(ids(await subject.release([run('t', 0, 'serial')]))).toEqual(['t-serial-1']);
  });

  it("frees a dead worker's leases when they expire; renewed leases hold", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const subject = await lanes(10, 1, 1000);
    const [held] = await push(subject, runs('t', 3));
    await sleep(600);
    await subject.renew([held]);
    // Past the first lease, within the renewed one.
    await sleep(600);
    expect(await subject.dispatch()).toEqual([]);
    await sleep(1100);
    expect(ids(await subject.dispatch())).toEqual(['t-flow-1']);
  });

  it('queues a run once however often it is pushed, and hands out again a hand-off never confirmed', async () => {
    const subject = await lanes(0);
    await push(subject, [run('t', 0), run('t', 0)]);
    expect(await subject.holds(['t-flow-0', 't-flow-1'])).toEqual([true, false]);
    await redis.hset(`${prefix}:slots`, 'worker', 1);
    expect(ids(await subject.dispatch())).toEqual(['t-flow-0']);
    // Handed out but not confirmed: still held, and handed out again once the transit times out.
    expect(await subject.holds(['t-flow-0'])).toEqual([true]);
    await redis.zadd(`${prefix}:runs:fair:transit`, Date.now() - 60_000, 't-flow-0');
    expect(ids(await subject.dispatch())).toEqual(['t-flow-0']);
    subject.confirm(['t-flow-0']);
    await subject.dispatch();
    expect(await subject.holds(['t-flow-0'])).toEqual([false]);
  });
});

describe('concurrency keys in the lanes', () => {
  const keyed = (item: LaneRun, key: string, limit = 1): LaneRun => ({ ...item, concurrency: { key, limit } });

  it('lets in the runs of a key up to its limit, the others in the order of their ids, across flows', async () => {
    const subject = await lanes(10);
    const first = keyed(run('t', 0, 'create'), 't:order-1');
    const handed = await push(subject, [
      first,
      keyed(run('t', 2, 'update'), 't:order-1'),
      keyed(run('t', 1, 'update'), 't:order-1'),
      keyed(run('t', 0, 'other'), 't:order-2'),
      run('t', 0, 'free'),
    ]);
    expect(ids(handed).sort()).toEqual(['t-create-0', 't-free-0', 't-other-0']);
    expect(await subject.keyedWaiting()).toEqual([{ tenantId: 't', kind: 'concurrency_key', runs: 2 }]);
    // A run that waits (a retry, a wait node) keeps its key until it is back.
    expect(await subject.release([{ ...first, heldUntil: Date.now() + 60_000 }])).toEqual([]);
    expect(ids(await subject.release([first]))).toEqual(['t-update-1']);
    expect(ids(await subject.release([keyed(run('t', 1, 'update'), 't:order-1')]))).toEqual(['t-update-2']);

    expect(await subject.keyedWaiting()).toEqual([]);
    const wider = await push(
      subject,
      ['a', 'b', 'c'].map((n, i) => keyed(run('t', i, n), 't:order-3', 2)),
    );
    expect(ids(wider)).toEqual(['t-a-0', 't-b-1']);
  });

  it('keeps the latest run of a debounce key until it is due; an older one pushed again gives way', async () => {
    const subject = await lanes(10);
    const debounced = (n: number, periodMs: number): LaneRun => ({
      ...run('t', n),
      debounce: { key: 't:flow:order-1', periodMs, maxWaitMs: 60_000 },
    });
    expect(await subject.push([debounced(1, 60_000), debounced(2, 60_000)])).toEqual({
      now: [],
      debounced: [{ tenantId: 't', runId: 't-flow-1', by: 't-flow-2' }],
      refused: [],
    });
    // Queued again after Redis lost it (its store update missed), the older run gives way to the slot's.
    expect((await subject.push([debounced(1, 60_000)])).debounced).toEqual([
      { tenantId: 't', runId: 't-flow-1', by: 't-flow-2' },
    ]);
    expect(await subject.keyedWaiting()).toEqual([{ tenantId: 't', kind: 'debounce', runs: 1 }]);
    expect(await subject.dispatch()).toEqual([]);
    // The latest, with a period already over, is due at once.
    const { now, debounced: replaced } = await subject.push([debounced(3, 0)]);
    expect(replaced).toEqual([{ tenantId: 't', runId: 't-flow-2', by: 't-flow-3' }]);
    expect(ids(now)).toEqual(['t-flow-3']);
    expect(await subject.keyedWaiting()).toEqual([]);
    expect(await subject.backlog()).toEqual({});
  });

  it("lets the next run of a key in when the holder's lease expires (its worker died)", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const subject = await lanes(10, 0, 1000);
    const handed = await push(subject, [keyed(run('t', 0), 'f:flow:1'), keyed(run('t', 1), 'f:flow:1')]);
    expect(ids(handed)).toEqual(['t-flow-0']);
    await sleep(600);
    await subject.renew(handed);
    await sleep(600);
    expect(await subject.dispatch()).toEqual([]);
    await sleep(1100);
    expect(ids(await subject.dispatch())).toEqual(['t-flow-1']);
  });
});

describe('priorities in the lanes', () => {
  it("starts a tenant's runs of a higher priority first, a flow's limit counting all of them", async () => {
    const subject = await lanes(1);
    await subject.flowSettings('t', 'urgent', { priority: 1 });
    await subject.flowSettings('t', 'orders', { concurrency: 1 });
    // Taken one at a time: the queue holds the first pushed, the rest wait in their lanes.
    const first = await started(subject, await push(subject, runs('t', 2, 'orders')));
    await push(subject, [
      ...runs('t', 2, 'urgent'),
      ...['r0', 'r1'].map((id) => ({ ...run('t', 0, 'orders'), runId: id, priority: 5 })),
      run('t', 2, 'orders'),
      run('other', 0),
    ]);
    const order = [...ids(first)];
    let ended = first;
    for (let n = 0; n < 8; n++) {
      ended = await end(subject, ended);
      order.push(...ids(ended));
    }
    // Tenants in turn; within t, priority 1, then 3 (the flow's runs one at a time), then the replays' 5.
    expect(order).toEqual([
      't-orders-0',
      'other-flow-0',
      't-urgent-0',
      't-urgent-1',
      't-orders-1',
      't-orders-2',
      'r0',
      'r1',
    ]);
  });
});

describe('a tenant moving between slot groups', () => {
  it('is forgotten where it leaves, refused in both groups until its move ends, then served where it went', async () => {
    const leaving = await lanes(1);
    const [t0, t1, t2, t3] = runs('t', 4);
    const handed = await started(leaving, await push(leaving, [t0, t1, t2, run('u', 0)]));
    expect(ids(handed)).toEqual(['t-flow-0']);
    await leaving.evict('t', 'out', [t0, t1, t2]);
    expect(await leaving.backlog()).toEqual({ u: 1 });
    expect((await leaving.push([t3])).refused).toEqual(['t-flow-3']);
    // The run it had executing ends: the next goes to the other tenant, none of its own.
    expect(ids(await end(leaving, handed))).toEqual(['u-flow-0']);
    expect(await leaving.dispatch()).toEqual([]);

    const left = prefix;
    prefix = `test-lanes-${randomBytes(4).toString('hex')}`;
    try {
      const going = await lanes(4);
      await going.evict('t', 'in', []);
      expect((await going.push([t1])).refused).toEqual(['t-flow-1']);
      // The move's own runs are taken, oldest first, and none starts before the move ends.
      expect(await going.push([t1, t2, t3], true)).toEqual({ now: [], debounced: [], refused: [] });
      expect(await going.dispatch()).toEqual([]);
      expect(ids(await going.settle('t'))).toEqual(['t-flow-1', 't-flow-2', 't-flow-3']);
      expect((await going.push([run('t', 4)])).now).toHaveLength(1);
    } finally {
      const keys = await redis.keys(`${left}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  });
});
