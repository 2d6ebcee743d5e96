import type { NextFunction, Request, Response } from 'express';
import type { Store } from '../../engine/store/port.ts';
import { HttpProblem } from '../problem.ts';
import { authenticateClient } from './clients.ts';
import type { TokenVerifier } from './verifier.ts';

/**
 * Whether an Authorization header is an operator's: HTTP Basic with an operator client's id and
 * secret (what browsers and Prometheus' basic_auth send), or an operator's bearer token.
 */
export async function isOperatorAuthorization(store: Store, verifier: TokenVerifier, authorization: string | undefined): Promise<boolean> {
  if (authorization?.startsWith('Basic ')) {
    const decoded = Buffer.from(authorization.slice(6), 'base64').toString();
    const separator = decoded.indexOf(':');
    if (separator < 0) return false;
    const client = await authenticateClient(store, decoded.slice(0, separator), decoded.slice(separator + 1));
    return client?.operator === true;
  }
  if (authorization?.startsWith('Bearer ')) return (await verifier.verify(authorization).catch(() => undefined))?.operator === true;
  return false;
}

export const operatorsOnly = () => new HttpProblem(401, 'Operators only', 'sign in with an operator client id and secret', {
  headers: { 'WWW-Authenticate': 'Basic realm="Tributary operators", charset="UTF-8"' },
});

/** Express middleware: operators pass, anyone else gets 401 with a Basic challenge. */
export function operatorGuard(store: Store, verifier: TokenVerifier) {
  return (req: Request, _res: Response, next: NextFunction) => {
    isOperatorAuthorization(store, verifier, req.get('authorization')).then((allowed) => next(allowed ? undefined : operatorsOnly()), next);
  };
}
