import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { NextFunction, Request, Response, Router } from 'express';
import type { Store } from '../engine/store/port.ts';
import { authenticateClient } from './auth/clients.ts';
import type { TokenVerifier } from './auth/verifier.ts';
import { HttpProblem } from './problem.ts';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * bull-board over every queue, for operators only: HTTP Basic with an operator client's id and
 * secret (a browser asks for them), or a bearer token of an operator client.
 */
export function dashboardRoutes(queues: Queue[], store: Store, verifier: TokenVerifier): [(req: Request, res: Response, next: NextFunction) => void, Router] {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: queues.map((queue) => new BullMQAdapter(queue)), serverAdapter });

  const guard = (req: Request, _res: Response, next: NextFunction) => {
    isOperator(req.get('authorization')).then(
      (allowed) => next(allowed ? undefined : new HttpProblem(401, 'Operators only', 'sign in with an operator client id and secret', {
        headers: { 'WWW-Authenticate': 'Basic realm="Tributary operators", charset="UTF-8"' },
      })),
      next,
    );
  };

  async function isOperator(authorization: string | undefined): Promise<boolean> {
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

  return [guard, serverAdapter.getRouter() as Router];
}
