import type { Intake } from '../intake/index.ts';
import type { SecretInfo, Variable } from '../model/index.ts';
import { type Keyring, secretContext } from '../secrets/index.ts';
import { constantTimeEqual } from '../triggers/index.ts';
import type { Page, PageRequest, PlatformScope, Store } from '../store/index.ts';
import type { NamedRecords } from './named-records.ts';

/** The owner of platform-wide values (the store's `tenantId: null`); any other owner is a tenant. */
export const PLATFORM = '';
const scopeOf = (owner: string): PlatformScope => ({ tenantId: owner === PLATFORM ? null : owner });

/** Named JSON values: created or replaced, listed, read, deleted. */
export interface NamedValues extends NamedRecords<Variable> {
  put(owner: string, name: string, value: unknown): Promise<{ variable: Variable; created: boolean }>;
  get(owner: string, name: string): Promise<Variable | undefined>;
}

/**
 * The values flows read: a tenant's variables (`$vars`), its secrets (`$secrets`: sealed, write-only) and the
 * platform's values with each tenant's overrides (`$platform`).
 */
export class ValueService {
  readonly variables: NamedValues;
  readonly platform: NamedValues;
  /** Write-only: listed by name, never read. */
  readonly secrets: NamedRecords<SecretInfo>;

  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    private readonly intake: Pick<Intake, 'invalidateTenant'>,
  ) {
    this.variables = {
      put: (tenantId, name, value) => store.putVariable(tenantId, name, value),
      list: (tenantId, page) => store.listVariables(tenantId, page),
      get: (tenantId, name) => store.getVariable(tenantId, name),
      remove: (tenantId, name) => store.deleteVariable(tenantId, name),
    };
    this.platform = {
      put: (owner, name, value) => store.putPlatformValue(scopeOf(owner), name, value),
      list: (owner, page) => store.listPlatformValues(scopeOf(owner), page),
      get: (owner, name) => store.getPlatformValue(scopeOf(owner), name),
      remove: (owner, name) => store.deletePlatformValue(scopeOf(owner), name),
    };
    this.secrets = {
      list: (tenantId: string, page: PageRequest): Promise<Page<SecretInfo>> => store.listSecrets(tenantId, page),
      remove: async (tenantId: string, name: string) => {
        const removed = await store.deleteSecret(tenantId, name);
        this.intake.invalidateTenant(tenantId);
        return removed;
      },
    };
  }

  /** The secret sealed (AES-256-GCM, under the current key id) and kept; the value is never shown again. */
  async putSecret(tenantId: string, name: string, value: string): Promise<{ secret: SecretInfo; created: boolean }> {
    const stored = await this.store.putSecret(tenantId, name, this.keyring.seal(value, secretContext(tenantId, name)));
    // A flow URL may verify with it: this process resolves the tenant's URLs again (others within
    // INTAKE_CACHE_TTL_MS).
    this.intake.invalidateTenant(tenantId);
    return stored;
  }

  /** Whether `candidate` is the tenant's secret `name`, compared in constant time (a key a caller presents). */
  async secretMatches(tenantId: string, name: string, candidate: string): Promise<boolean> {
    const [sealed] = await this.store.sealedSecrets(tenantId, [name]);
    return (
      sealed !== undefined && constantTimeEqual(this.keyring.open(sealed, secretContext(tenantId, name)), candidate)
    );
  }
}
