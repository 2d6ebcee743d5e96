import type { Tenant, TenantLimits } from '../model/index.ts';
import type { Intake } from '../intake/index.ts';
import type { FlowSchedules, TenantLimitsInRedis } from '../queue/index.ts';
import type { HeldChoice, RunService } from './run-service.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import { found } from './references.ts';

/**
 * What an operator does with tenants: create, suspend and resume them, set their own limits, delete them with
 * everything they own. Every process learns of a change from Redis or the store, not from this one.
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

  async get(id: string): Promise<Tenant> {
    return found(`tenant ${id}`, await this.store.getTenant(id));
  }

  list(filter: { status?: Tenant['status'] }, page: PageRequest): Promise<Page<Tenant>> {
    return this.store.listTenants(filter, page);
  }

  /** Its API calls are refused with the reason; its deliveries are recorded but held; its schedules skip. */
  async suspend(id: string, reason: string): Promise<Tenant> {
    return found(`tenant ${id}`, await this.store.setTenantStatus(id, 'suspended', reason));
  }

  /** Active again; what it kept held while suspended is released, discarded or kept, as `held` says. */
  async resume(id: string, held: HeldChoice) {
    const tenant = found(`tenant ${id}`, await this.store.setTenantStatus(id, 'active', null));
    const outcome = await this.runs.settleHeld(
      id,
      held,
      { heldBy: 'suspended' },
      'discarded when the tenant was resumed',
    );
    return { tenant, ...outcome };
  }

  /** Its own limits in place of the deployment's, applied by every process from the next dispatch or delivery. */
  async setLimits(id: string, limits: TenantLimits): Promise<Tenant> {
    const tenant = found(`tenant ${id}`, await this.store.setTenantLimits(id, limits));
    await this.limits.apply(tenant);
    return tenant;
  }

  /** The tenant and every record it owns, its schedules and limits gone first so that nothing starts meanwhile. */
  async delete(id: string): Promise<void> {
    await this.get(id);
    await this.schedules.removeTenant(id);
    await this.limits.apply({ id, limits: {} });
    await this.store.deleteTenant(id);
    this.intake.invalidateTenant(id);
  }
}
