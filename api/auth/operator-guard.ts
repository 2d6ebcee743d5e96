import type { NextFunction, Request, Response } from 'express';
import { HttpProblem } from '../http/index.ts';
import type { ClientAuthenticator } from './clients.ts';
import type { DashboardSessions } from './dashboard-session.ts';
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

/**
 * Express middleware: operators pass (an Authorization header, or the dashboard's session cookie when `sessions` is
 * given). Anyone else gets 401 with a Basic challenge, except a browser asking for a page, which is sent to
 * `signInPath`.
 */
export function operatorGuard(
  clients: ClientAuthenticator,
  verifier: TokenVerifier,
  sessions?: DashboardSessions,
  signInPath?: string,
) {
  return (req: Request, res: Response, next: NextFunction) => {
    const authorization = req.get('authorization');
    const allowed =
      authorization === undefined && sessions
        ? sessions.check(req.get('cookie'), res)
        : isOperatorAuthorization(clients, verifier, authorization, req.ip ?? '');
    allowed.then((operator) => {
      if (operator) return next();
      // A browser navigating asks for text/html by name; programs (*/*) get the challenge.
      if (signInPath && req.method === 'GET' && (req.get('accept') ?? '').includes('text/html'))
        return res.redirect(303, signInPath);
      next(operatorsOnly());
    }, next);
  };
}
