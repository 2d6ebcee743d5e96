import express, { type NextFunction, type Request, type Response, Router } from 'express';
import { SchemaValidator, ValidationError } from '../../engine/model/index.ts';
import type { ClientAuthenticator } from './clients.ts';
import type { TokenIssuer } from './issuer.ts';
import { allTenantScopes, isScope, operatorScope } from './scopes.ts';

interface TokenRequest {
  grant_type: string;
  client_id?: string;
  client_secret?: string;
  audience?: string;
  scope?: string;
}

const field = { type: 'string', minLength: 1, maxLength: 200 } as const;
const tokenRequest = new SchemaValidator<TokenRequest>(
  {
    type: 'object',
    required: ['grant_type'],
    properties: {
      grant_type: field,
      client_id: field,
      client_secret: field,
      audience: { type: 'string', maxLength: 200 },
      scope: { type: 'string', maxLength: 2000 },
    },
  },
  'token request',
  { storable: true },
);

/** A token request is a few short fields; anyone may send one, so no more than this is read or parsed. */
const TOKEN_REQUEST_LIMIT = 16 * 1024;
const BASIC = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i;
const REALM = 'Basic realm="tributary", charset="UTF-8"';

/**
 * An error as RFC 6749 §5.2 says (what OAuth client libraries read): JSON with `error` and
 * `error_description`; a client that failed to authenticate with Basic gets 401 and a challenge.
 */
function refuse(res: Response, status: number, error: string, description: string, challenge = false) {
  if (challenge) res.set('WWW-Authenticate', REALM);
  res
    .status(status)
    .set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' })
    .json({ error, error_description: description });
}

/** Client id and secret from an HTTP Basic header (RFC 6749 §2.3.1: each form-urlencoded, then joined). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const match = BASIC.exec(header);
  const decoded = match ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 1) return 'malformed';
  try {
    const unform = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
    return { id: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
  } catch {
    return 'malformed';
  }
}

/**
 * A token request's fields, parsed by the body's Content-Type, or read as JSON or as a form when it had none; or why
 * the body cannot be read.
 */
function tokenFields(req: Request): { fields: unknown } | { problem: string } {
  const { body } = req;
  if (typeof body === 'string') {
    if (!body.trimStart().startsWith('{')) return { fields: Object.fromEntries(new URLSearchParams(body)) };
    try {
      return { fields: JSON.parse(body) };
    } catch (error) {
      return { problem: `the body is not valid JSON: ${(error as Error).message}` };
    }
  }
  if (body !== undefined || req.get('content-type') === undefined) return { fields: body ?? {} };
  return {
    problem:
      `a body of ${req.get('content-type')} cannot be read: send application/x-www-form-urlencoded (RFC 6749) ` +
      'or application/json',
  };
}

/**
 * The embedded OAuth 2.0 authorization server (client credentials): `POST /oauth/token`, its JWKS,
 * and its metadata (RFC 8414, and the OpenID discovery document clients look for first).
 */
export function tokenRoutes(clients: ClientAuthenticator, issuer: TokenIssuer, publicUrl: () => string): Router {
  const router = Router();
  router.post(
    '/oauth/token',
    express.json({ limit: TOKEN_REQUEST_LIMIT }),
    express.urlencoded({ extended: false, limit: TOKEN_REQUEST_LIMIT }),
    // Some generated clients send no Content-Type: the body is read as it reads, JSON or a form.
    express.text({ type: (req) => req.headers['content-type'] === undefined, limit: TOKEN_REQUEST_LIMIT }),
    async (req, res) => {
      const body = tokenFields(req);
      if ('problem' in body) return refuse(res, 400, 'invalid_request', body.problem);
      let request: TokenRequest;
      try {
        // Checked as it would be stored: a NUL or a lone surrogate never reaches the credential store.
        request = tokenRequest.validate(body.fields, '$.body');
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        return refuse(res, 400, 'invalid_request', error.errors.map((e) => `${e.path} ${e.message}`).join('; '));
      }
      const basic = basicCredentials(req.get('authorization'));
      if (basic === 'malformed') return refuse(res, 401, 'invalid_client', 'the Basic credentials are malformed', true);
      if (basic && request.client_secret !== undefined)
        return refuse(res, 400, 'invalid_request', 'authenticate the client one way: a Basic header or the body');
      if (request.grant_type !== 'client_credentials')
        return refuse(res, 400, 'unsupported_grant_type', 'only grant_type client_credentials is supported');
      const clientId = basic?.id ?? request.client_id;
      const clientSecret = basic?.secret ?? request.client_secret;
      if (!clientId || !clientSecret)
        return refuse(
          res,
          401,
          'invalid_client',
          'client authentication is required (client_id and client_secret)',
          true,
        );
      if (request.audience !== undefined && request.audience !== issuer.audience)
        return refuse(res, 400, 'invalid_target', `this issuer serves the audience ${issuer.audience}`);
      const asked = request.scope?.split(' ').filter(Boolean);
      const unknown = asked?.filter((scope) => !isScope(scope)) ?? [];
      if (unknown.length > 0) return refuse(res, 400, 'invalid_scope', `unknown scope(s): ${unknown.join(', ')}`);

      const client = await clients.authenticate(clientId, clientSecret, req.ip ?? '');
      if (!client) return refuse(res, 401, 'invalid_client', 'unknown client or wrong secret', basic !== undefined);
      // What was asked and the client holds; all it holds when nothing was asked.
      const granted = asked ? client.scopes.filter((scope) => asked.includes(scope)) : client.scopes;
      if (granted.length === 0)
        return refuse(res, 400, 'invalid_scope', 'the client holds none of the scopes asked for');
      res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' }).json(await issuer.issue(client, granted));
    },
  );
  // A body express.json could not parse is the client's mistake, told as RFC 6749 §5.2 says.
  router.use((error: { type?: string; message: string }, _req: Request, res: Response, next: NextFunction) => {
    if (error.type !== 'entity.parse.failed') return next(error);
    refuse(res, 400, 'invalid_request', `the body is not valid JSON: ${error.message}`);
  });
  router.get('/.well-known/jwks.json', async (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(await issuer.jwks());
  });
  const metadata = (_req: unknown, res: Response) => {
    const base = publicUrl();
    res.set('Cache-Control', 'public, max-age=300').json({
      issuer: issuer.issuer(),
      token_endpoint: `${base}/oauth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...allTenantScopes, operatorScope],
      response_types_supported: ['token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      service_documentation: `${base}/docs`,
    });
  };
  router.get('/.well-known/oauth-authorization-server', metadata);
  router.get('/.well-known/openid-configuration', metadata);
  return router;
}
