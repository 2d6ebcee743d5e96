/**
 * Redis Cluster runs a script only over keys of one slot, and a hash tag (`{...}`) puts a key in the
 * slot of its tag. A deployment's keys (prefix P) fall in three groups:
 * - `{P:runs}`: the run queue (BullMQ's keys), the tenants' lanes, leases and limits, the workers'
 *   heartbeats and slots, the delivery quotas, the maintenance flag, the epoch and the recovery report.
 *   fair-dispatch.lua moves runs from the lanes into the queue and admission reads the lanes' backlog, so
 *   they cannot be apart: one master carries the run traffic.
 * - `{P:ticks}`: the schedules' tick queue and its epoch, in a slot of its own.
 * - `P:tributary:rate:<name>`: the API-call and sign-in token buckets, one key each, spread over every master.
 * On one Redis the tags change nothing.
 */
export const runsSlot = (prefix: string) => `{${prefix}:runs}`;
export const ticksSlot = (prefix: string) => `{${prefix}:ticks}`;
