import { environmentOf, PRODUCTION, type Tenant, type TenantLimits } from '../model/index.ts';
import type { Intake } from '../intake/index.ts';
import type { FlowSchedules, TenantLimitsInRedis } from '../queue/index.ts';
import type { HeldChoice, RunService } from './run-service.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import { environmentIds } from './environment-service.ts';
import { found } from './references.ts';

/**
 * What an operator does with tenants, in every environment of each: create, suspend and resume them, set their own
 * limits, delete them with everything they own. Every process learns of a change from Redis or the store, not from this one.
 */
export class TenantService {
  constructor(
    private readonly store: Store,
    private readonly runs: Pick<RunService, 'settleHeld'>,
    private readonly schedules: Pick<FlowSchedules, 'removeTenant'>,
    private readonly limits: Pick<TenantLimitsInRedis, 'apply'>,
    private readonly intake: Pick<Intake, 'invalidateTenant'>,
  ) {}

  create(tenant: { id: string; name: string }): Promise<Tenant> {
    return this.store.createTenant(tenant);
  }

  /** A tenant, not one of its environments (`acme~staging` is acme's: decision 28). */
  async get(id: string): Promise<Tenant> {
    const tenant = environmentOf(id).environment === PRODUCTION ? await this.store.getTenant(id) : undefined;
    return found(`tenant ${id}`, tenant);
  }

  list(filter: { status?: Tenant['status'] }, page: PageRequest): Promise<Page<Tenant>> {
    return this.store.listTenants(filter, page);
  }

  /** Its API calls are refused with the reason; its deliveries are recorded but held; its schedules skip. */
  async suspend(id: string, reason: string): Promise<Tenant> {
    await this.get(id);
    return found(`tenant ${id}`, await this.store.setTenantStatus(id, 'suspended', reason));
  }

  /** Active again; what it kept held while suspended is released, discarded or kept, as `held` says. */
  async resume(id: string, held: HeldChoice) {
    await this.get(id);
    const tenant = found(`tenant ${id}`, await this.store.setTenantStatus(id, 'active', null));
    const outcome = { released: 0, discarded: 0 };
    for (const environment of await environmentIds(this.store, id)) {
      const settled = await this.runs.settleHeld(
        environment,
        held,
        { heldBy: 'suspended' },
        'discarded when the tenant was resumed',
      );
      outcome.released += settled.released;
      outcome.discarded += settled.discarded;
    }
    return { tenant, ...outcome };
  }

  /** Its own limits in place of the deployment's, applied by every process from the next dispatch or delivery. */
  async setLimits(id: string, limits: TenantLimits): Promise<Tenant> {
    await this.get(id);
    const tenant = found(`tenant ${id}`, await this.store.setTenantLimits(id, limits));
    for (const environment of await environmentIds(this.store, id))
      await this.limits.apply({ id: environment, limits });
    return tenant;
  }

  /** The tenant and every record it owns, its schedules and limits gone first so that nothing starts meanwhile. */
  async delete(id: string): Promise<void> {
    await this.get(id);
    const environments = await environmentIds(this.store, id);
    for (const environment of environments) {
      await this.schedules.removeTenant(environment);
      await this.limits.apply({ id: environment, limits: {} });
    }
    await this.store.deleteTenant(id);
    for (const environment of environments) this.intake.invalidateTenant(environment);
  }
}
