/**
 * A tenant's environments (decision 28). Each keeps its own flows, versions, variables, secrets, destinations,
 * messages and runs, under an id of its own: the tenant's id for production (so a tenant's records from before
 * environments are its production's), `<tenant>~<environment>` otherwise. Tenant ids cannot hold the separator, so
 * no tenant's id is another's environment's. Every store query is filtered by that id: environments are kept apart
 * as tenants are.
 */
export const PRODUCTION = 'production';
export const ENVIRONMENT_SEPARATOR = '~';
/** Environments a tenant may have besides production: each has the tenant's limits of its own (decision 28). */
export const MAX_ENVIRONMENTS = 10;

/** The id a tenant's records in `environment` are kept under. */
export function environmentId(tenantId: string, environment: string): string {
  return environment === PRODUCTION ? tenantId : `${tenantId}${ENVIRONMENT_SEPARATOR}${environment}`;
}

/** The tenant and environment an id names (`acme~staging`: acme's staging; `acme`: its production). */
export function environmentOf(id: string): { tenantId: string; environment: string } {
  const at = id.indexOf(ENVIRONMENT_SEPARATOR);
  return at < 0
    ? { tenantId: id, environment: PRODUCTION }
    : { tenantId: id.slice(0, at), environment: id.slice(at + 1) };
}
