import { PLATFORM } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import { nameParams, namedValueRoutes } from '../route-kit/index.ts';

/**
 * Platform values, for operators: platform-wide (tag PlatformGlobal) and per-tenant overrides
 * (PlatformTenantGlobal). Flows read them as `$platform.NAME`, the tenant's override first.
 */
export function platformValueRoutes({ values: { platform }, tenants }: ApiContext) {
  const values = {
    records: platform,
    noun: ['platform value', 'platform values'] as [string, string],
    scopes: { read: 'platform:admin', write: 'platform:admin' } as const,
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
        return (await tenants.get((params as { tenantId: string }).tenantId)).id;
      },
    }),
  ];
}
