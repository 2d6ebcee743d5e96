/**
 * Redis underneath the queues: the client type, Lua scripts as ioredis commands, the hash-tag slots keys live in,
 * a deadline on calls that would wait for a connection for ever, and SingleFlight for loops that must not overlap.
 */
export { runGroupOf, runsSlot, slotOfKey, ticksSlot } from './key-slots.ts';
export { LuaScript } from './lua-script.ts';
export { ioredisOf, type RedisClient } from './redis-client.ts';
export { SingleFlight } from './single-flight.ts';
export { ENQUEUE_TIMEOUT_MS, withinEnqueueTimeout } from './timeouts.ts';
export { isRedisUnavailable, RedisUnavailableError } from './unavailable.ts';
