import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Router } from 'express';

export const DASHBOARD_PATH = '/admin/queues';

/** bull-board over every queue, for operators only (see operatorGuard). */
export function dashboardRoutes(queues: Queue[]): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: queues.map((queue) => new BullMQAdapter(queue)), serverAdapter });
  return serverAdapter.getRouter() as Router;
}
