import { NotFoundError } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { nameParams, namedValueRoutes } from './variables.ts';

/** The platform-wide scope of a platform value (the store's `tenantId: null`). */
const PLATFORM = '';
const scopeOf = (owner: string) => ({ tenantId: owner === PLATFORM ? null : owner });

/**
 * Platform values, for operators: platform-wide (seed tag PlatformGlobal) and per-tenant overrides
 * (PlatformTenantGlobal). Flows read them as `$platform.NAME`, the tenant's override first.
 */
export function platformValueRoutes({ store }: ApiContext) {
  const values = {
    noun: ['platform value', 'platform values'] as [string, string],
    scopes: { read: 'platform:admin', write: 'platform:admin' } as const,
    put: (owner: string, name: string, value: unknown) => store.putPlatformValue(scopeOf(owner), name, value),
    list: (owner: string, page: { first: number; after?: string }) => store.listPlatformValues(scopeOf(owner), page),
    get: (owner: string, name: string) => store.getPlatformValue(scopeOf(owner), name),
    remove: (owner: string, name: string) => store.deletePlatformValue(scopeOf(owner), name),
  };
  return [
    ...namedValueRoutes({
      ...values,
      base: '/api/v1/platform-globals',
      tag: 'PlatformGlobal',
      summary: 'Create or replace a platform value (read in flows as $platform.NAME)',
      owner: async () => PLATFORM,
    }),
    ...namedValueRoutes({
      ...values,
      base: '/api/v1/tenants/{tenantId}/platform-globals',
      tag: 'PlatformTenantGlobal',
      summary: "Create or replace a tenant's override of a platform value",
      params: {
        type: 'object',
        required: ['tenantId', 'name'],
        properties: { tenantId: { type: 'string' }, ...nameParams.properties },
      },
      async owner({ params }) {
        const { tenantId } = params as { tenantId: string };
        if (!(await store.getTenant(tenantId))) throw new NotFoundError(`no tenant ${tenantId}`);
        return tenantId;
      },
    }),
  ];
}
