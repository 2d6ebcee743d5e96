import type { SecretInfo, Variable } from '../../model/index.ts';
import type { SealedValue } from '../../secrets/index.ts';

import type { Page, PageRequest } from './common.ts';

/**
 * Values flows read: a tenant's variables and sealed secrets, and the platform's values with each tenant's
 * overrides.
 */
export interface ValueStore {
  putVariable(tenantId: string, name: string, value: unknown): Promise<{ variable: Variable; created: boolean }>;
  getVariable(tenantId: string, name: string): Promise<Variable | undefined>;
  listVariables(tenantId: string, page: PageRequest): Promise<Page<Variable>>;
  deleteVariable(tenantId: string, name: string): Promise<boolean>;
  putSecret(tenantId: string, name: string, sealed: SealedValue): Promise<{ secret: SecretInfo; created: boolean }>;
  listSecrets(tenantId: string, page: PageRequest): Promise<Page<SecretInfo>>;
  deleteSecret(tenantId: string, name: string): Promise<boolean>;
  /** Sealed values of the named secrets (a trigger's verification key). */
  sealedSecrets(tenantId: string, names: Iterable<string>): Promise<Array<{ name: string } & SealedValue>>;
  /** Platform-wide named values (PlatformGlobal); `tenantId` set: one tenant's overrides (PlatformTenantGlobal). */
  putPlatformValue(
    scope: PlatformScope,
    name: string,
    value: unknown,
  ): Promise<{ variable: Variable; created: boolean }>;
  getPlatformValue(scope: PlatformScope, name: string): Promise<Variable | undefined>;
  listPlatformValues(scope: PlatformScope, page: PageRequest): Promise<Page<Variable>>;
  deletePlatformValue(scope: PlatformScope, name: string): Promise<boolean>;
}

/** Where a platform value lives: platform-wide, or one tenant's override. */
export interface PlatformScope {
  tenantId: string | null;
}
