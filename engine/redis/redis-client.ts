import type { Cluster, Redis } from 'ioredis';

/** One Redis server or a Redis Cluster: the commands the queue layer sends are the same on both. */
export type RedisClient = Redis | Cluster;

/** BullMQ types its connection abstractly; with ioredis connections it is an ioredis client. */
export const ioredisOf = async (client: Promise<unknown>) => (await client) as RedisClient;
