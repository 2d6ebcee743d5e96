import type { RedisClient } from './redis-client.ts';

type Command = (...keysAndArgs: Array<string | number>) => Promise<unknown>;

/**
 * A Lua script run as an ioredis command (`defineCommand`, the way BullMQ loads its own): sent by its SHA1
 * (EVALSHA), and whole only when Redis does not have it yet (after a restart, on a new cluster node). The command
 * is defined on a client the first time the script runs on it.
 */
export class LuaScript {
  private readonly command: string;
  private readonly definedOn = new WeakSet<RedisClient>();

  /** `name` names the command on the client (`tributary:<name>`): one per script. */
  constructor(
    name: string,
    private readonly source: string,
  ) {
    this.command = `tributary:${name}`;
  }

  run(redis: RedisClient, keys: string[], args: Array<string | number>): Promise<unknown> {
    if (!this.definedOn.has(redis)) {
      redis.defineCommand(this.command, { lua: this.source });
      this.definedOn.add(redis);
    }
    // Without `numberOfKeys`, the command takes the number of keys first, as EVAL does.
    return (redis as unknown as Record<string, Command>)[this.command](keys.length, ...keys, ...args);
  }
}
