import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboundBudgets } from '../engine/limits/index.ts';
import type { OperationError } from '../engine/model/index.ts';
import type { BudgetLimits } from '../engine/outbound/index.ts';
import { REDIS_URL } from './support/harness.ts';

// Limits a destination configures (erp.limits), against a real Redis: the budget's requests go at most `ratePerSecond`
// a second, a second's worth at once, and `concurrency` at once, whichever request draws on it.
const redis = new Redis(REDIS_URL);
const prefix = `test-rate-${randomBytes(4).toString('hex')}`;
const RATE = 5;

afterAll(async () => {
  const keys = await redis.keys(`*${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const budgets = new OutboundBudgets(async () => redis, {
  prefix,
  initialConcurrency: 64,
  maxConcurrency: 256,
  wake: () => {},
});

/**
 * Requests of eight runs at once to the budget `erp:123`, each given back as soon as it is admitted: when each was
 * admitted. `limits` as the requests' configuration gives them (none: an http.request node naming the budget).
 */
async function eightAtOnce(limits?: BudgetLimits) {
  const asked = Date.now();
  const admitted = await Promise.all(
    Array.from({ length: 8 }, async (_, n) => {
      const grant = await budgets.enter(
        { tenantId: 't', runId: `run-${n}` },
        'erp:123',
        { limits },
        { leaseMs: 10_000, mayWaitAway: false },
      );
      budgets.leave(grant, 'ok');
      return { after: Date.now() - asked, waitedMs: grant.waitedMs };
    }),
  );
  return admitted.sort((a, b) => a.after - b.after);
}

/** Whether the request of each of `runs` is admitted now, asked at once; the others would wait for their turn. */
async function admittedAtOnce(budget: string, runs: number, limits?: BudgetLimits) {
  const answers = await Promise.allSettled(
    Array.from({ length: runs }, (_, n) =>
      budgets.enter(
        { tenantId: 't', runId: `${budget}-${n}` },
        budget,
        { limits },
        { leaseMs: 10_000, mayWaitAway: true },
      ),
    ),
  );
  for (const answer of answers)
    if (answer.status === 'rejected') expect((answer.reason as OperationError).kind).toBe('later');
  return answers.filter((answer) => answer.status === 'fulfilled').length;
}

describe('a configured rate', () => {
  it('admits a second of requests at once, then one each 1/rate s; removed, it no longer holds any back', async () => {
    const limited = await eightAtOnce({ ratePerSecond: RATE });
    expect(limited.slice(0, RATE).map(({ waitedMs }) => waitedMs)).toEqual([0, 0, 0, 0, 0]);
    // The k-th beyond the bucket waited until k points were restored.
    for (const [k, { after }] of limited.slice(RATE).entries())
      expect(after).toBeGreaterThanOrEqual(((k + 1) * 1000) / RATE - 5);
    // The bucket is empty now. A request that names the budget without configuring it (an http.request node) is held
    // to the rate the budget keeps: the first waits for a point.
    const [unconfigured] = await eightAtOnce();
    expect(unconfigured.waitedMs).toBeGreaterThan(0);
    // Configured without a rate (the destination's limits removed), nothing waits for it.
    expect((await eightAtOnce({})).map(({ waitedMs }) => waitedMs)).toEqual(new Array(8).fill(0));
    expect((await eightAtOnce()).map(({ waitedMs }) => waitedMs)).toEqual(new Array(8).fill(0));
  });
});

describe('a configured concurrency', () => {
  it('holds every request drawing on the budget, configured or not', async () => {
    expect(await admittedAtOnce('erp:limited', 1, { concurrency: 2 })).toBe(1);
    // An http.request node naming the account's budget: the destination's limit holds it too.
    expect(await admittedAtOnce('erp:limited', 6)).toBe(1);
    // The window the budget keeps is within the limit: a start of 64 never went past it.
    expect((await budgets.statuses()).find(({ budget }) => budget === 'erp:limited')?.limit).toBe(2);
    expect(await admittedAtOnce('erp:open', 6, {})).toBe(6);
  });
});

describe("an account's cost points", () => {
  it('are never raised by an answer that came before a request the account answered since', async () => {
    const enter = (runId: string, cost: number, mayWaitAway = false) =>
      budgets.enter({ tenantId: 't', runId }, 'shop:points', { cost }, { leaseMs: 10_000, mayWaitAway });
    const price = (available: number) => ({ available, maximum: 100, restoreRate: 1, cost: 40, charged: 40 });
    // Two queries of 40 points, admitted by the budget one after the other, reach the shop the other way round: the
    // first is answered with 60 points left, the second with 20 (after both).
    const second = await enter('second', 40);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const first = await enter('first', 40);
    // The answer with 20 comes back first; the one with 60, earlier news, last (one call to Redis, in that order; the
    // next ask goes on the same connection after it).
    budgets.leave(second, 'ok', undefined, price(20));
    budgets.leave(first, 'ok', undefined, price(60));
    await new Promise((resolve) => setImmediate(resolve));
    // A query of 30 waits for its points (the shop has 20 at most), rather than be sent to be throttled.
    await expect(enter('third', 30, true)).rejects.toMatchObject({ kind: 'later' });
  });
});
