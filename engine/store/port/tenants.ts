import type { Environment, UserSettings, Tenant, TenantLimits } from '../../model/index.ts';
import type { SealedValue } from '../../secrets/index.ts';

import type { Page, PageRequest, StateLimit, StateUsage } from './common.ts';

/** Tenants, and the settings of each of their users. */
export interface TenantStore {
  createTenant(tenant: { id: string; name: string }): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | undefined>;
  listTenants(filter: { status?: Tenant['status'] }, page: PageRequest): Promise<Page<Tenant>>;
  /** Suspend (with a reason) or resume a tenant in every environment; undefined if there is none. */
  setTenantStatus(id: string, status: Tenant['status'], reason: string | null): Promise<Tenant | undefined>;
  /** Replace the operator's overrides of the per-tenant settings, in every environment; undefined if there is no tenant. */
  setTenantLimits(id: string, limits: TenantLimits): Promise<Tenant | undefined>;
  /** Remove the tenant and every record it owns (flows, messages, runs, secrets, clients...) in every environment. */
  deleteTenant(id: string): Promise<boolean>;
  /**
   * A new environment of the tenant (decision 28), with the tenant's status and limits; a ConflictError if it exists or
   * the tenant has MAX_ENVIRONMENTS already.
   */
  createEnvironment(tenantId: string, name: string): Promise<Environment>;
  /** The tenant's environments besides production, by name. */
  listEnvironments(tenantId: string): Promise<Environment[]>;
  /** Remove an environment and every record kept in it; false if there is none. */
  deleteEnvironment(tenantId: string, name: string): Promise<boolean>;
  /**
   * The deployment's limits on what each tenant keeps, replacing those in force. From then on a write
   * that would pass one fails with a LimitReachedError, whichever path it takes.
   */
  setStateLimits(limits: StateLimit[]): Promise<void>;
  /** What the tenant keeps, by kind of state, and the limits on it. */
  tenantUsage(tenantId: string): Promise<Record<string, StateUsage>>;
  getUserSettings(tenantId: string, subject: string): Promise<UserSettings | undefined>;
  putUserSettings(tenantId: string, subject: string, settings: UserSettings['settings']): Promise<UserSettings>;
  /** The tenants (and environments) an operator moved to a slot group of the run path, and the moves under way. */
  listRunPlacements(): Promise<RunPlacement[]>;
  /** Record where a tenant's runs go, or the state of its move; a NotFoundError if there is no such tenant. */
  saveRunPlacement(placement: RunPlacement): Promise<void>;
}

/** Where an operator moved a tenant's runs (a slot group of the run path, RUN_GROUPS), and the move under way. */
export interface RunPlacement {
  /** A tenant, or one of its environments. */
  tenantId: string;
  group: number;
  /** While it moves: the group it leaves, and since when. */
  movingFrom: number | null;
  since: string | null;
  /** The move has forgotten its runs in both groups, and waits for none to execute in the one it leaves. */
  draining: boolean;
}

/** API clients (their secrets hashed) and the embedded issuer's signing keys. */
export interface CredentialStore {
  createClient(client: Omit<Client, 'createdAt'>): Promise<Client>;
  getClient(clientId: string): Promise<Client | undefined>;
  /** Every client, or one tenant's, oldest first. */
  listClients(filter: { tenantId?: string }): Promise<Client[]>;
  /** Remove a client; false if there is none. */
  deleteClient(clientId: string): Promise<boolean>;
  listSigningKeys(): Promise<SigningKey[]>;
  addSigningKey(key: Omit<SigningKey, 'createdAt'>): Promise<void>;
}

export interface Client {
  clientId: string;
  /** Null for an operator client, which may act for every tenant. */
  tenantId: string | null;
  /** SHA-256 of the secret; secrets are 32 random bytes, so a fast hash is enough. */
  secretHash: string;
  scopes: string[];
  operator: boolean;
  /** The environments of its tenant it may act in; null for all of them. */
  environments: string[] | null;
  createdAt: string;
}

export interface SigningKey {
  kid: string;
  /** The private JWK, sealed with the secrets keyring. */
  sealedPrivateJwk: SealedValue;
  publicJwk: Record<string, unknown>;
  createdAt: string;
}
