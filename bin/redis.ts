import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';

/** ioredis options for REDIS_URL. Workers block on Redis and must wait for it forever; intake must fail fast. */
export function redisOptions(url: string, role: 'worker' | 'producer'): RedisOptions {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
    // Detect half-open connections after a network flap instead of waiting on them silently.
    keepAlive: 10_000,
    ...(role === 'worker'
      ? { maxRetriesPerRequest: null }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout: 5000 }),
  };
}

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis({
    ...redisOptions(url, 'producer'),
    lazyConnect: true,
    retryStrategy: () => null,
    connectTimeout: 1000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** A URL as it may be printed or logged: its user name and password masked (`redis://:***@host:6379`). */
export function printableUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  if (parsed.username) parsed.username = '***';
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/**
 * For `npm start` on a machine without a running Redis: start `redis-server` as a child, with
 * its data under DATA_DIR, the append-only file on, and eviction off (BullMQ needs noeviction).
 */
export async function startEmbeddedRedis(url: string, dataDir: string): Promise<ChildProcess> {
  if (spawnSync('redis-server', ['--version']).error) {
    throw new Error(
      `nothing answers at REDIS_URL=${printableUrl(url)} and redis-server is not installed: ` +
        'install Redis (e.g. apt-get install redis-server) or set REDIS_URL',
    );
  }
  const parsed = new URL(url);
  const dir = path.join(dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    'redis-server',
    [
      '--port',
      parsed.port || '6379',
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--maxmemory-policy',
      'noeviction',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  for (let tries = 0; tries < 50; tries++) {
    if (await redisAnswers(url)) return child;
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stopEmbeddedRedis(child);
  throw new Error(`redis-server did not start on ${printableUrl(url)}`);
}

/** Stops an embedded redis-server and waits until it has exited (killed if it takes over 5 s). */
export async function stopEmbeddedRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
