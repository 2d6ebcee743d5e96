import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { SignInThrottle } from '../api/auth/rate-limits.ts';
import { HttpProblem } from '../api/http/problem.ts';
import { RateLimiter } from '../engine/limits/rate-limiter.ts';
import { REDIS_URL } from './support/harness.ts';

const redis = new Redis(REDIS_URL);
const prefix = `test-${randomBytes(5).toString('hex')}`;
const limiter = new RateLimiter(async () => redis, prefix);
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('RateLimiter', () => {
  it('spends a burst, then refuses with the wait; a bucket expires once full again', async () => {
    const rate = { perSecond: 0.5, burst: 2 };
    expect(await limiter.take('b', rate)).toEqual({ allowed: true, left: 1 });
    expect((await limiter.take('b', rate)).allowed).toBe(true);
    expect(await limiter.take('b', rate)).toEqual({ allowed: false, retryAfterSeconds: 2 });
    const ttl = await redis.pttl(`${prefix}:tributary:rate:b`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5000);
    await limiter.giveBack('b', rate);
    expect((await limiter.take('b', rate)).allowed).toBe(true);
  });
});

describe('SignInThrottle', () => {
  const throttle = new SignInThrottle(limiter, {
    perClient: { perSecond: 0.01, burst: 10 },
    perAddress: { perSecond: 0.01, burst: 4 },
    slowDownMsPerFailure: 1,
  });
  const fail = async () => undefined;
  const succeed = async () => 'signed in';

  it('refuses an address that failed with many client ids, before comparing; other addresses go on', async () => {
    for (let n = 0; n < 4; n++) expect(await throttle.attempt(`client-${n}`, '203.0.113.7', fail)).toBeUndefined();
    let compared = false;
    const refused = await throttle
      .attempt('client-new', '203.0.113.7', async () => {
        compared = true;
        return 'signed in';
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HttpProblem);
    expect((refused as HttpProblem).status).toBe(429);
    expect(compared).toBe(false);
    expect(await throttle.attempt('client-new', '203.0.113.8', succeed)).toBe('signed in');
  });

  it('lets a client whose failures locked it sign in from an address that never failed, once', async () => {
    for (let n = 0; n < 10; n++) await throttle.attempt('locked-client', `192.0.2.${n}`, fail).catch(() => {});
    const refused = await throttle.attempt('locked-client', '192.0.2.1', succeed).catch((error: unknown) => error);
    expect((refused as HttpProblem).status).toBe(429);
    expect(await throttle.attempt('locked-client', '192.0.2.200', succeed)).toBe('signed in');
    // A failure from that address spends its clean record: the next try from it is refused.
    expect(await throttle.attempt('locked-client', '192.0.2.201', fail)).toBeUndefined();
    const again = await throttle.attempt('locked-client', '192.0.2.201', succeed).catch((error: unknown) => error);
    expect((again as HttpProblem).status).toBe(429);
  });

  it('does not count sign-ins that succeed', async () => {
    for (let n = 0; n < 8; n++)
      expect(await throttle.attempt('busy-client', '198.51.100.1', succeed)).toBe('signed in');
  });
});
