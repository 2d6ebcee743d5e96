import type { Queue } from 'bullmq';

/** A worker is counted as consuming while its heartbeat is younger than this. */
export const HEARTBEAT_TTL_MS = 15_000;
/** Also how often a worker tells dispatch how many runs it takes, and renews its runs' leases. */
export const HEARTBEAT_INTERVAL_MS = 1_000;
/**
 * Dispatch fills a worker's slots, and counts them when it keeps slots for tenants running few runs, while its
 * heartbeat is younger than this (three beats). A worker killed is out of that count within it rather than
 * HEARTBEAT_TTL_MS: while its slots counted, a tenant's runs could take every slot of the worker that took over.
 */
export const DISPATCH_TTL_MS = 3 * HEARTBEAT_INTERVAL_MS;

/** A BullMQ queue or worker: it names the keys under its queue (its prefix, its queue's name). */
type QueueKeys = Pick<Queue, 'toKey'>;

/** The live workers of a queue (zset: worker -> last heartbeat), beside BullMQ's own keys. */
export const heartbeatKey = (queue: QueueKeys) => queue.toKey('tributary:workers');

/** Each live worker's concurrency (hash: worker -> slots): what fair dispatch fills. */
export const workerSlotsKey = (queue: QueueKeys) => `${heartbeatKey(queue)}:slots`;
