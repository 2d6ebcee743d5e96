import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { HttpProblem } from '../http/index.ts';
import { operatorScope, type Scope } from './scopes.ts';

/** Who is calling, as the bearer token says. */
export interface Principal {
  subject: string;
  /** The tenant the token grants; operators act for every tenant. */
  tenantId: string | null;
  operator: boolean;
  scopes: ReadonlySet<string>;
  /** The environments of its tenant it may act in (the `environments` claim); null for all of them. */
  environments: readonly string[] | null;
}

/**
 * Where the signing keys come from: an external identity provider's JWKS (`AUTH_JWKS_URL`), fetched
 * over HTTP and cached; or the embedded issuer's public keys, read from the store. The embedded
 * issuer's are never fetched over HTTP: behind a proxy or tunnel the process may not reach its own
 * public URL.
 */
export type SigningKeys =
  | { jwksUrl: URL }
  | { stored: () => Promise<JWK[]>; clientExists: (clientId: string) => Promise<boolean> };

export interface VerifierOptions {
  /** The expected `iss`, read when a token is verified. */
  issuer: () => string;
  audience: string;
  keys: SigningKeys;
}

const unauthorized = (detail: string) =>
  new HttpProblem(401, 'Unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

/**
 * A token naming a key not yet seen reloads the stored keys, at most this often (another process may have made
 * one).
 */
const STORED_KEYS_RELOAD_MS = 30_000;

/** The embedded issuer's public keys from the store, reloaded when a token names an unknown key. */
function storedKeySet(load: () => Promise<JWK[]>): JWTVerifyGetKey {
  let set: Promise<JWTVerifyGetKey> | undefined;
  let loadedAt = 0;
  const reload = () => {
    loadedAt = Date.now();
    set = load().then((keys) => createLocalJWKSet({ keys }));
    set.catch(() => (set = undefined));
    return set;
  };
  return async (header, token) => {
    try {
      return await (await (set ?? reload()))(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || Date.now() - loadedAt < STORED_KEYS_RELOAD_MS) throw error;
      return (await reload())(header, token);
    }
  };
}

/** How long a client of the embedded issuer is taken to exist once seen: a revoked client's tokens fail within it. */
export const CLIENT_RECHECK_MS = 30_000;
/** Clients remembered at once (only signed tokens name one); past it, the memory starts again. */
const KNOWN_CLIENTS = 10_000;

/** The embedded issuer's clients that exist, each looked up again after CLIENT_RECHECK_MS. */
class KnownClients {
  private readonly seenAt = new Map<string, number>();

  constructor(private readonly exists: (clientId: string) => Promise<boolean>) {}

  async has(clientId: string): Promise<boolean> {
    const seen = this.seenAt.get(clientId);
    if (seen !== undefined && Date.now() - seen < CLIENT_RECHECK_MS) return true;
    if (!(await this.exists(clientId))) {
      this.seenAt.delete(clientId);
      return false;
    }
    if (this.seenAt.size >= KNOWN_CLIENTS) this.seenAt.clear();
    this.seenAt.set(clientId, Date.now());
    return true;
  }
}

/** Validates bearer JWTs against the identity provider's signing keys. */
export class TokenVerifier {
  private readonly keys: JWTVerifyGetKey;
  /** Tokens of the embedded issuer are refused once their client is revoked; an outside provider revokes its own. */
  private readonly clients?: KnownClients;

  constructor(private readonly options: VerifierOptions) {
    const { keys } = options;
    if ('jwksUrl' in keys) {
      this.keys = createRemoteJWKSet(keys.jwksUrl, { cooldownDuration: 30_000, timeoutDuration: 5000 });
    } else {
      this.keys = storedKeySet(keys.stored);
      this.clients = new KnownClients(keys.clientExists);
    }
  }

  async verify(authorization: string | undefined): Promise<Principal> {
    const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization ?? '');
    if (!match)
      throw unauthorized(
        authorization
          ? 'the Authorization header is not a bearer token'
          : 'an Authorization: Bearer <token> header is required',
      );
    let payload: JWTPayload;
    try {
      // A token without an expiry would be valid for ever: `exp` is required (`nbf` is honoured when present).
      ({ payload } = await jwtVerify(match[1], this.keys, {
        issuer: this.options.issuer(),
        audience: this.options.audience,
        algorithms: ['ES256', 'RS256'],
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw unauthorized('the token has expired');
      if (error instanceof errors.JOSEError && !(error instanceof errors.JWKSTimeout))
        throw unauthorized('the token is not valid');
      const { keys } = this.options;
      const source = 'jwksUrl' in keys ? `from AUTH_JWKS_URL (${keys.jwksUrl.href})` : 'from the store';
      throw new HttpProblem(
        503,
        'Identity provider unavailable',
        `the signing keys could not be read ${source}; try again`,
        { headers: { 'Retry-After': '5' } },
      );
    }
    if (this.clients && !(await clientExists(this.clients, String(payload.sub ?? ''))))
      throw unauthorized('the client of this token has been revoked');
    const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : []);
    const operator = payload.operator === true && scopes.has(operatorScope);
    return {
      subject: String(payload.sub ?? ''),
      tenantId: typeof payload.tenant_id === 'string' ? payload.tenant_id : null,
      operator,
      scopes,
      environments: environmentsClaim(payload.environments),
    };
  }
}

/** Whether the client exists; 503 when the store cannot say. */
async function clientExists(clients: KnownClients, clientId: string): Promise<boolean> {
  try {
    return await clients.has(clientId);
  } catch {
    throw new HttpProblem(503, 'Store unavailable', 'the token could not be checked; try again', {
      headers: { 'Retry-After': '5' },
    });
  }
}

/** A token limited to environments names them in an array of strings; any other value grants none. */
function environmentsClaim(claim: unknown): readonly string[] | null {
  if (claim === undefined) return null;
  return Array.isArray(claim) ? claim.filter((name) => typeof name === 'string') : [];
}

/** 403 unless the principal may act for `tenantId` in `environment` with `scope`. */
export function authorize(principal: Principal, tenantId: string, environment: string, scope: Scope | undefined) {
  if (!principal.operator && principal.tenantId !== tenantId)
    throw new HttpProblem(403, 'Forbidden', `the token does not grant tenant ${tenantId}`);
  if (!principal.operator && principal.environments && !principal.environments.includes(environment))
    throw new HttpProblem(
      403,
      'Forbidden',
      `the token grants the environments ${principal.environments.join(', ')} of tenant ${tenantId}, not ${environment}`,
    );
  if (scope && !principal.scopes.has(scope))
    throw new HttpProblem(403, 'Forbidden', `the token lacks the scope ${scope}`);
}
