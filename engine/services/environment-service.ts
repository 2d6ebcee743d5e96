import { ConflictError, type Environment, environmentId, NotFoundError, PRODUCTION } from '../model/index.ts';
import type { Intake } from '../intake/index.ts';
import type { FlowSchedules, TenantLimitsInRedis } from '../queue/index.ts';
import type { Store } from '../store/index.ts';
import { found } from './references.ts';

/** The ids a tenant's records are kept under: its production's (its own id), then each other environment's. */
export async function environmentIds(store: Store, tenantId: string): Promise<string[]> {
  const others = await store.listEnvironments(tenantId);
  return [tenantId, ...others.map((environment) => environmentId(tenantId, environment.name))];
}

/**
 * A tenant's environments (decision 28): production always, others made and removed by the tenant. Each keeps its own
 * flows, values, destinations and history, and has the tenant's limits of its own.
 */
export class EnvironmentService {
  constructor(
    private readonly store: Store,
    private readonly schedules: Pick<FlowSchedules, 'removeTenant'>,
    private readonly limits: Pick<TenantLimitsInRedis, 'apply'>,
    private readonly intake: Pick<Intake, 'invalidateTenant'>,
  ) {}

  /** Production first, then the others by name. */
  async list(tenantId: string): Promise<Environment[]> {
    const tenant = found(`tenant ${tenantId}`, await this.store.getTenant(tenantId));
    return [{ name: PRODUCTION, createdAt: tenant.createdAt }, ...(await this.store.listEnvironments(tenantId))];
  }

  /** A new, empty environment, under the tenant's status and limits. */
  async create(tenantId: string, name: string): Promise<Environment> {
    if (name === PRODUCTION) return (await this.list(tenantId))[0];
    const environment = await this.store.createEnvironment(tenantId, name);
    const tenant = found(`tenant ${tenantId}`, await this.store.getTenant(tenantId));
    if (Object.keys(tenant.limits).length > 0)
      await this.limits.apply({ id: environmentId(tenantId, name), limits: tenant.limits });
    return environment;
  }

  /** The environment and everything kept in it, its schedules and limits gone first so that nothing starts. */
  async delete(tenantId: string, name: string): Promise<void> {
    if (name === PRODUCTION) throw new ConflictError('production is not removed: it goes with its tenant');
    const id = environmentId(tenantId, name);
    if (!(await this.store.listEnvironments(tenantId)).some((environment) => environment.name === name))
      throw new NotFoundError(`tenant ${tenantId} has no environment ${name}`);
    await this.schedules.removeTenant(id);
    await this.limits.apply({ id, limits: {} });
    await this.store.deleteEnvironment(tenantId, name);
    this.intake.invalidateTenant(id);
  }
}
