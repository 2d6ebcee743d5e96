import { createHash, randomBytes } from 'node:crypto';
import type { Client, CredentialStore, TenantStore } from '../../engine/store/index.ts';
import { constantTimeEqual } from '../../engine/triggers/index.ts';
import { PRODUCTION } from '../../engine/model/index.ts';
import type { SignInThrottle } from './rate-limits.ts';
import { allTenantScopes, isScope, operatorScope } from './scopes.ts';

export interface ClientCredentials {
  client_id: string;
  client_secret: string;
  tenant: string | null;
  scopes: string[];
  /** The environments it may act in; absent: all of its tenant's. */
  environments?: string[];
}

const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('base64url');

/**
 * Create OAuth client credentials. The secret is shown once and stored only as a hash (it is 32
 * random bytes, so SHA-256 suffices; no password stretching is needed).
 */
export async function createClientCredentials(
  store: TenantStore & CredentialStore,
  options: { tenantId?: string; scopes?: string[]; operator?: boolean; environments?: string[] },
): Promise<ClientCredentials> {
  const operator = options.operator ?? false;
  if (operator && options.tenantId)
    throw new Error("a client is either one tenant's (--tenant <id>) or an operator's (--operator), not both");
  if (!operator && !options.tenantId) throw new Error('a tenant client needs --tenant <id>');
  const unknown = (options.scopes ?? []).filter((scope) => !isScope(scope));
  if (unknown.length > 0)
    throw new Error(
      `unknown scope(s) ${unknown.join(', ')}; the scopes are ${[...allTenantScopes, operatorScope].join(', ')}`,
    );
  if (!operator && options.scopes?.includes(operatorScope))
    throw new Error(`${operatorScope} is the operator's scope: use --operator`);
  if (options.tenantId && !(await store.getTenant(options.tenantId)))
    throw new Error(`no tenant ${options.tenantId}: create it first`);
  const environments = options.environments?.length ? [...new Set(options.environments)] : undefined;
  if (environments) {
    if (!options.tenantId) throw new Error('only a tenant client can be limited to environments');
    const known = new Set([PRODUCTION, ...(await store.listEnvironments(options.tenantId)).map((env) => env.name)]);
    const missing = environments.filter((name) => !known.has(name));
    if (missing.length > 0)
      throw new Error(`tenant ${options.tenantId} has no environment ${missing.join(', ')}: create it first`);
  }
  const scopes = options.scopes?.length
    ? options.scopes
    : operator
      ? [...allTenantScopes, operatorScope]
      : [...allTenantScopes];
  const clientId = `trb_${randomBytes(9).toString('base64url')}`;
  const clientSecret = randomBytes(32).toString('base64url');
  await store.createClient({
    clientId,
    tenantId: options.tenantId ?? null,
    secretHash: hashSecret(clientSecret),
    scopes,
    operator,
    environments: environments ?? null,
  });
  return {
    client_id: clientId,
    client_secret: clientSecret,
    tenant: options.tenantId ?? null,
    scopes,
    ...(environments ? { environments } : {}),
  };
}

/**
 * Signs clients in wherever a client id and secret are presented (the token endpoint, the dashboard,
 * an operator's Basic header), under the throttle on repeated failures.
 */
export class ClientAuthenticator {
  constructor(
    private readonly store: CredentialStore,
    private readonly throttle: SignInThrottle,
  ) {}

  /** The client, if the secret matches; a 429 problem when this client or address failed too often. */
  authenticate(clientId: string, clientSecret: string, address: string): Promise<Client | undefined> {
    return this.throttle.attempt(clientId, address, () => authenticateClient(this.store, clientId, clientSecret));
  }
}

/** The client these credentials name, if the secret matches (compared in constant time). */
async function authenticateClient(
  store: CredentialStore,
  clientId: string,
  clientSecret: string,
): Promise<Client | undefined> {
  const client = await store.getClient(clientId);
  // Hash even for an unknown id, so the answer takes as long either way.
  const presented = hashSecret(clientSecret);
  return client && constantTimeEqual(presented, client.secretHash) ? client : undefined;
}
