import express, { Router } from 'express';
import { SchemaValidator } from '../engine/model/index.ts';
import type { ClientAuthenticator } from './auth/clients.ts';
import type { TokenIssuer } from './auth/issuer.ts';
import { HttpProblem } from './problem.ts';

const tokenRequest = new SchemaValidator<{
  grant_type: string;
  client_id: string;
  client_secret: string;
  audience?: string;
}>(
  {
    type: 'object',
    required: ['grant_type', 'client_id', 'client_secret'],
    properties: {
      grant_type: { type: 'string' },
      client_id: { type: 'string', minLength: 1, maxLength: 200 },
      client_secret: { type: 'string', minLength: 1, maxLength: 200 },
      audience: { type: 'string', maxLength: 200 },
    },
  },
  'token request',
  { storable: true },
);

/** OAuth error codes (RFC 6749 §5.2) ride along in the problem as `error`. */
const oauthProblem = (status: number, error: string, detail: string) =>
  new HttpProblem(status, 'Token request refused', detail, { error });

/** A token request is a few short fields; anyone may send one, so no more than this is read or parsed. */
const TOKEN_REQUEST_LIMIT = 16 * 1024;

/** The embedded issuer: `POST /oauth/token` (client credentials) and its JWKS. */
export function tokenRoutes(clients: ClientAuthenticator, issuer: TokenIssuer): Router {
  const router = Router();
  router.post(
    '/oauth/token',
    express.json({ limit: TOKEN_REQUEST_LIMIT }),
    express.urlencoded({ extended: false, limit: TOKEN_REQUEST_LIMIT }),
    async (req, res) => {
      const request = tokenRequest.validate(req.body ?? {}, '$.body');
      if (request.grant_type !== 'client_credentials')
        throw oauthProblem(400, 'unsupported_grant_type', 'only grant_type client_credentials is supported');
      if (request.audience !== undefined && request.audience !== issuer.audience) {
        throw oauthProblem(400, 'invalid_target', `this issuer serves the audience ${issuer.audience}`);
      }
      const client = await clients.authenticate(request.client_id, request.client_secret, req.ip ?? '');
      if (!client) throw oauthProblem(401, 'invalid_client', 'unknown client or wrong secret');
      res.set('Cache-Control', 'no-store').json(await issuer.issue(client));
    },
  );
  router.get('/.well-known/jwks.json', async (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(await issuer.jwks());
  });
  return router;
}
