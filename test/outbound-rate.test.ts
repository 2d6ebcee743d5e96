import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboundBudgets } from '../engine/limits/index.ts';
import { REDIS_URL } from './support/harness.ts';

// A rate a destination configures (erp.limits.ratePerSecond), against a real Redis: the budget's requests go at
// most that many a second, a second's worth at once.
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

/** Requests of eight runs at once, each given back as soon as it is admitted: when each was admitted. */
async function eightAtOnce(ratePerSecond?: number) {
  const asked = Date.now();
  const admitted = await Promise.all(
    Array.from({ length: 8 }, async (_, n) => {
      const grant = await budgets.enter(
        { tenantId: 't', runId: `run-${n}` },
        'erp:123',
        { ratePerSecond },
        { leaseMs: 10_000, mayWaitAway: false },
      );
      budgets.leave(grant, 'ok');
      return { after: Date.now() - asked, waitedMs: grant.waitedMs };
    }),
  );
  return admitted.sort((a, b) => a.after - b.after);
}

describe('a configured rate', () => {
  it('admits a second of requests at once, then one each 1/rate s; removed, it no longer holds any back', async () => {
    const limited = await eightAtOnce(RATE);
    expect(limited.slice(0, RATE).map(({ waitedMs }) => waitedMs)).toEqual([0, 0, 0, 0, 0]);
    // The k-th beyond the bucket waited until k points were restored.
    for (const [k, { after }] of limited.slice(RATE).entries())
      expect(after).toBeGreaterThanOrEqual(((k + 1) * 1000) / RATE - 5);
    // The bucket is empty now; without the rate, nothing waits for it.
    expect((await eightAtOnce()).map(({ waitedMs }) => waitedMs)).toEqual(new Array(8).fill(0));
  });
});
