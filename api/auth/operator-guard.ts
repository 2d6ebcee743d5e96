import type { NextFunction, Request, Response } from 'express';
import { HttpProblem } from '../problem.ts';
import type { ClientAuthenticator } from './clients.ts';
import type { TokenVerifier } from './verifier.ts';

/**
 * Whether an Authorization header is an operator's: HTTP Basic with an operator client's id and
 * secret (what browsers and Prometheus' basic_auth send; from `address`), or an operator's bearer token.
 */
export async function isOperatorAuthorization(
  clients: ClientAuthenticator,
  verifier: TokenVerifier,
  authorization: string | undefined,
  address: string,
): Promise<boolean> {
  if (authorization?.startsWith('Basic ')) {
    const decoded = Buffer.from(authorization.slice(6), 'base64').toString();
    const separator = decoded.indexOf(':');
    if (separator < 0) return false;
    const client = await clients.authenticate(decoded.slice(0, separator), decoded.slice(separator + 1), address);
    return client?.operator === true;
  }
  if (authorization?.startsWith('Bearer '))
    return (await verifier.verify(authorization).catch(() => undefined))?.operator === true;
  return false;
}

export const operatorsOnly = () =>
  new HttpProblem(401, 'Operators only', 'sign in with an operator client id and secret', {
    headers: { 'WWW-Authenticate': 'Basic realm="Tributary operators", charset="UTF-8"' },
  });

/** The cookie the dashboard's sign-in page sets: an operator's bearer token. */
export const OPERATOR_COOKIE = 'tributary_operator';

/** The operator token in the request's cookies, if any. */
function cookieToken(cookieHeader: string | undefined): string | undefined {
  for (const pair of cookieHeader?.split(';') ?? []) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === OPERATOR_COOKIE) return pair.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * Express middleware: operators pass (Authorization header, or the sign-in cookie). Anyone else gets
 * 401 with a Basic challenge, except a browser asking for a page, which is sent to `signInPath`.
 */
export function operatorGuard(clients: ClientAuthenticator, verifier: TokenVerifier, signInPath?: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    const cookie = cookieToken(req.get('cookie'));
    const authorization = req.get('authorization') ?? (cookie ? `Bearer ${cookie}` : undefined);
    isOperatorAuthorization(clients, verifier, authorization, req.ip ?? '').then((allowed) => {
      if (allowed) return next();
      // A browser navigating asks for text/html by name; programs (*/*) get the challenge.
      if (signInPath && req.method === 'GET' && (req.get('accept') ?? '').includes('text/html'))
        return res.redirect(303, signInPath);
      next(operatorsOnly());
    }, next);
  };
}
