/** BullMQ: run jobs, tenant lanes and fair dispatch, ticks, admission, maintenance, reconciler, recovery. */
export { type QuotaStatus, TenantQuotas } from './admission.ts';
export { inspectQueue } from './health.ts';
export { HEARTBEAT_TTL_MS } from './heartbeats.ts';
export { runsSlot, ticksSlot } from './key-slots.ts';
export { ioredisOf, type RedisClient } from './redis-client.ts';
export { MaintenanceMode } from './maintenance.ts';
export { jobStates, QueueAdmin } from './queue-admin.ts';
export { type Rate, type RateDecision, RateLimiter } from './rate-limiter.ts';
export { QueueReconciler } from './reconciler.ts';
export { QueueRecovery } from './recovery.ts';
export {
  acceptMessages,
  ENQUEUE_TIMEOUT_MS,
  RUN_QUEUE,
  runJob,
  type RunJobData,
  RunQueue,
  RunWorker,
} from './run-queue.ts';
export { ReplayRunner } from './replay-runner.ts';
export { FlowSchedules, TickWorker } from './schedules.ts';
export { TenantLimitsInRedis } from './tenant-limits.ts';
export { SingleFlight } from './single-flight.ts';
