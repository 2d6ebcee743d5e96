/**
 * Runs in BullMQ: tenants' fair lanes and dispatch, the run queue and its workers (leases, heartbeats, the crash
 * ledger), schedule ticks, tenants' limits kept in Redis, the queue admin.
 */
export { HEARTBEAT_TTL_MS, heartbeatKey } from './heartbeats.ts';
export { jobStates, QueueAdmin } from './queue-admin.ts';
export { acceptMessages, enqueueRuns, isRunQueue, runJob, type RunJobData, RunQueue } from './run-queue.ts';
export { MAX_TAKEOVERS, RunWorker } from './run-worker.ts';
export { FlowSchedules, TickWorker } from './schedules.ts';
export { TenantLimitsInRedis } from './tenant-limits.ts';
export { type TenantPlacement, TenantMoves } from './tenant-moves.ts';
