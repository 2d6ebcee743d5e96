import type { TenantAction } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** Tenants' low-code actions, versioned. */
export interface ActionStore {
  /** Saves the action as its next version (1 for a new name). */
  putAction(
    tenantId: string,
    action: Pick<TenantAction, 'name' | 'description' | 'expression' | 'inputSchema' | 'outputSchema'>,
  ): Promise<TenantAction>;
  /** A version of an action; the latest without one. */
  getAction(tenantId: string, name: string, version?: number): Promise<TenantAction | undefined>;
  /** The latest version of each action, by name. */
  listActions(tenantId: string, page: PageRequest): Promise<Page<TenantAction>>;
  listActionVersions(tenantId: string, name: string, page: PageRequest): Promise<Page<TenantAction>>;
  /** Every version. */
  deleteAction(tenantId: string, name: string): Promise<boolean>;
}
