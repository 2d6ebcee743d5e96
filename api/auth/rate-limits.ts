import type { Logger } from 'pino';
import type { Rate, RateDecision, RateLimiter } from '../../engine/limits/index.ts';
import type { Tenant } from '../../engine/store/index.ts';
import { HttpProblem } from '../http/index.ts';

const tooMany = (title: string, detail: string, retryAfterSeconds: number) =>
  new HttpProblem(429, title, detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });

/**
 * A tenant's API calls, per second with a burst (an operator's override on the tenant, else the
 * deployment's): over it, 429 with Retry-After. Operators' calls do not count. While Redis cannot
 * answer, calls are let through: the API reads the store, and a limiter that is down must not take
 * it down too.
 */
export class ApiCallLimit {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly deployment: Rate,
    private readonly logger: Logger,
  ) {}

  async admit(tenant: Pick<Tenant, 'id' | 'limits'>): Promise<void> {
    const rate = {
      perSecond: tenant.limits.apiCallsPerSecond ?? this.deployment.perSecond,
      burst: tenant.limits.apiCallBurst ?? this.deployment.burst,
    };
    const decision = await this.limiter.take(`api:${tenant.id}`, rate).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'API call limit not checked: Redis did not answer');
      return { allowed: true } as const;
    });
    if (!decision.allowed)
      throw tooMany(
        'Too many requests',
        `tenant ${tenant.id} makes more than ${rate.perSecond} API calls a second, ${rate.burst} at once ` +
          '(TENANT_API_CALLS_PER_SECOND, TENANT_API_CALL_BURST); retry later',
        decision.retryAfterSeconds,
      );
  }
}

export interface SignInAllowance {
  /** Failed sign-ins one client id may have before it is refused, and how fast they come back. */
  perClient: Rate;
  /** Failed sign-ins one address may have (trying many client ids), and how fast they come back. */
  perAddress: Rate;
  /** Once half an allowance is spent, each answer waits this long per failure beyond the half (2 s at most). */
  slowDownMsPerFailure: number;
}

/** 10 failures per client, then one a minute; 30 per address, then one every 20 s. */
const DEFAULT_ALLOWANCE: SignInAllowance = {
  perClient: { perSecond: 1 / 60, burst: 10 },
  perAddress: { perSecond: 1 / 20, burst: 30 },
  slowDownMsPerFailure: 200,
};
const MAX_SLOW_DOWN_MS = 2000;
const UNCOUNTED: RateDecision = { allowed: true, left: Number.POSITIVE_INFINITY };

/**
 * Guessing a client secret, at the token endpoint, the dashboard's sign-in or an operator's Basic
 * header: each attempt takes one token from its client id's allowance and one from its address's,
 * given back when it succeeds. Answers slow down once half an allowance is spent, and an attempt
 * with none left is refused (429) before the secret is even compared — but for a client refused for
 * its failures trying from an address that has not failed. Tokens are taken before the attempt, so
 * parallel guesses cannot outrun the count.
 */
export class SignInThrottle {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly allowance = DEFAULT_ALLOWANCE,
  ) {}

  /** The result of `authenticate`, or a 429 problem when the client or the address has no attempts left. */
  async attempt<T>(
    clientId: string,
    address: string,
    authenticate: () => Promise<T | undefined>,
  ): Promise<T | undefined> {
    const { perClient, perAddress } = this.allowance;
    const clientBucket = `sign-in:client:${clientId}`;
    const addressBucket = `sign-in:address:${address}`;
    // Secrets are 32 random bytes: while Redis cannot count, sign-ins go on unthrottled rather than stop.
    const [client, from] = await Promise.all([
      this.limiter.take(clientBucket, perClient).catch(() => UNCOUNTED),
      this.limiter.take(addressBucket, perAddress).catch(() => UNCOUNTED),
    ]);
    // A client refused for its failures still signs in from an address that never failed: a stranger
    // who fails on purpose cannot lock its owner out.
    const cleanAddress = from.allowed && from.left >= perAddress.burst - 1;
    const refused = !from.allowed ? from : !client.allowed && !cleanAddress ? client : undefined;
    if (refused && !refused.allowed) {
      if (from.allowed) await this.giveBack(addressBucket, perAddress);
      if (client.allowed) await this.giveBack(clientBucket, perClient);
      throw tooMany(
        'Too many failed sign-ins',
        'too many failed attempts for this client or from this address; retry later',
        refused.retryAfterSeconds,
      );
    }
    const overHalf = Math.max(
      client.allowed ? perClient.burst / 2 - client.left : 0,
      from.allowed ? perAddress.burst / 2 - from.left : 0,
    );
    if (overHalf > 0)
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(MAX_SLOW_DOWN_MS, overHalf * this.allowance.slowDownMsPerFailure)),
      );
    const result = await authenticate();
    if (result !== undefined) {
      if (from.allowed) await this.giveBack(addressBucket, perAddress);
      if (client.allowed) await this.giveBack(clientBucket, perClient);
    }
    return result;
  }

  private async giveBack(bucket: string, rate: Rate) {
    await this.limiter.giveBack(bucket, rate).catch(() => {});
  }
}
