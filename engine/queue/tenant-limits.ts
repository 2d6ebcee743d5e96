import { environmentId, environmentOf } from '../model/index.ts';
import { pages, type Tenant, type TenantStore } from '../store/index.ts';
import type { TenantQuotas } from '../limits/index.ts';
import type { RunQueue } from './run-queue.ts';

/**
 * Where an operator's per-tenant overrides are enforced: fair dispatch (weight, concurrency) and
 * admission (the delivery quota), both read in Redis by every process. The store keeps them; this
 * writes them there when they change, and again after Redis lost its data.
 */
export class TenantLimitsInRedis {
  constructor(
    private readonly runs: Pick<RunQueue, 'share'>,
    private readonly quotas: TenantQuotas,
  ) {}

  async apply({ id, limits }: Pick<Tenant, 'id' | 'limits'>): Promise<void> {
    // The API call limit is read from the tenant with each call; the rest lives in Redis.
    const { weight, concurrency, apiCallsPerSecond: _, apiCallBurst: __, ...quota } = limits;
    await Promise.all([this.runs.share(id, { weight, concurrency }), this.quotas.override(id, quota)]);
  }

  /**
   * The own limits of a tenant, or of one of its environments (they have the tenant's), written again where its runs
   * go now (it moved to another slot group); none clears what that group had of it.
   */
  async place(store: TenantStore, id: string): Promise<void> {
    const tenant = await store.getTenant(environmentOf(id).tenantId);
    await this.apply({ id, limits: tenant?.limits ?? {} });
  }

  /** Every tenant's own limits, in each of its environments, written again (after Redis lost them). */
  async syncAll(store: TenantStore): Promise<void> {
    for await (const tenant of pages((after) => store.listTenants({}, { first: 100, after }))) {
      if (Object.keys(tenant.limits).length === 0) continue;
      await this.apply(tenant);
      for (const { name } of await store.listEnvironments(tenant.id))
        await this.apply({ id: environmentId(tenant.id, name), limits: tenant.limits });
    }
  }
}
