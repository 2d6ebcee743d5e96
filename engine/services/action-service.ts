import type { TenantAction } from '../model/index.ts';
import type { ExpressionSandbox } from '../expressions/index.ts';
import { compileAction } from '../plugins/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import type { NamedRecords } from './named-records.ts';
import { found } from './references.ts';

/** What an action is saved from; its name is where it is saved. */
export type ActionDefinition = Pick<
  TenantAction,
  'name' | 'description' | 'expression' | 'inputSchema' | 'outputSchema'
>;

/**
 * Tenants' low-code actions: named, versioned JSONata transforms with input and output schemas, run by nodes as
 * `"operation": "action:<name>"`. Versions are immutable.
 */
export class ActionService implements NamedRecords<TenantAction> {
  constructor(
    private readonly store: Store,
    private readonly sandbox: ExpressionSandbox,
  ) {}

  /** The action checked as a node would compile it (field errors from `$`), and saved as its next version. */
  save(tenantId: string, action: ActionDefinition): Promise<TenantAction> {
    compileAction(action, this.sandbox);
    return this.store.putAction(tenantId, action);
  }

  /** The latest version of each action, by name. */
  list(tenantId: string, page: PageRequest): Promise<Page<TenantAction>> {
    return this.store.listActions(tenantId, page);
  }

  /** The latest version. */
  get(tenantId: string, name: string): Promise<TenantAction | undefined> {
    return this.store.getAction(tenantId, name);
  }

  /** Every version. */
  remove(tenantId: string, name: string): Promise<boolean> {
    return this.store.deleteAction(tenantId, name);
  }

  listVersions(tenantId: string, name: string, page: PageRequest): Promise<Page<TenantAction>> {
    return this.store.listActionVersions(tenantId, name, page);
  }

  async getVersion(tenantId: string, name: string, version: number): Promise<TenantAction> {
    return found(`version ${version} of action ${name}`, await this.store.getAction(tenantId, name, version));
  }
}
