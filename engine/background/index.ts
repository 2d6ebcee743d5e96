/**
 * What workers keep doing besides runs: the reconciler (the store and the queue agree), recovery after Redis lost
 * its data, bulk replays, and the queue's health for /readyz.
 */
export { inspectQueue } from './health.ts';
export { QueueReconciler } from './reconciler.ts';
export { QueueRecovery } from './recovery.ts';
export { ReplayRunner } from './replay-runner.ts';
