import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { HttpProblem } from '../problem.ts';
import { operatorScope, type Scope } from './scopes.ts';

/** Who is calling, as the bearer token says. */
export interface Principal {
  subject: string;
  /** The tenant the token grants; operators act for every tenant. */
  tenantId: string | null;
  operator: boolean;
  scopes: ReadonlySet<string>;
}

export interface VerifierOptions {
  issuer: string;
  audience: string;
  /** Resolved on first use: the embedded issuer's JWKS URL is known only once the server listens. */
  jwksUrl: () => URL;
}

const unauthorized = (detail: string) =>
  new HttpProblem(401, 'Unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

/** Validates bearer JWTs against the issuer's JWKS (fetched over HTTP and cached, as for any identity provider). */
export class TokenVerifier {
  private jwks?: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly options: VerifierOptions) {}

  async verify(authorization: string | undefined): Promise<Principal> {
    const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization ?? '');
    if (!match) throw unauthorized(authorization ? 'the Authorization header is not a bearer token' : 'an Authorization: Bearer <token> header is required');
    this.jwks ??= createRemoteJWKSet(this.options.jwksUrl(), { cooldownDuration: 30_000, timeoutDuration: 5000 });
    let payload: JWTPayload;
    try {
      // A token without an expiry would be valid for ever: `exp` is required (`nbf` is honoured when present).
      ({ payload } = await jwtVerify(match[1], this.jwks, {
        issuer: this.options.issuer, audience: this.options.audience, algorithms: ['ES256', 'RS256'], requiredClaims: ['exp'],
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw unauthorized('the token has expired');
      if (error instanceof errors.JOSEError && !(error instanceof errors.JWKSTimeout)) throw unauthorized('the token is not valid');
      throw new HttpProblem(503, 'Identity provider unavailable', 'the signing keys could not be fetched; try again', { headers: { 'Retry-After': '5' } });
    }
    const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : []);
    const operator = payload.operator === true && scopes.has(operatorScope);
    return { subject: String(payload.sub ?? ''), tenantId: typeof payload.tenant_id === 'string' ? payload.tenant_id : null, operator, scopes };
  }
}

/** 403 unless the principal may act for `tenantId` with `scope`. */
export function authorize(principal: Principal, tenantId: string, scope: Scope | undefined) {
  if (!principal.operator && principal.tenantId !== tenantId) throw new HttpProblem(403, 'Forbidden', `the token does not grant tenant ${tenantId}`);
  if (scope && !principal.scopes.has(scope)) throw new HttpProblem(403, 'Forbidden', `the token lacks the scope ${scope}`);
}
