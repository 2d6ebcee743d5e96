import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ConnectionOptions } from 'bullmq';
import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** Workers block on Redis and must wait for it forever; intake must fail fast. */
export type RedisRole = 'worker' | 'producer';

/** ioredis options for REDIS_URL. */
export function redisOptions(url: string, role: RedisRole): RedisOptions {
  const parsed = new URL(url);
  return {
    ...nodeOptions(parsed, role),
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    db: parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0,
  };
}

/** What every connection to one Redis server takes from its URL and the role: credentials, TLS, timeouts. */
function nodeOptions(parsed: URL, role: RedisRole): RedisOptions {
  return {
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
    // Detect half-open connections after a network flap instead of waiting on them silently.
    keepAlive: 10_000,
    ...(role === 'worker'
      ? { maxRetriesPerRequest: null }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout: 5000 }),
  };
}

/**
 * The Redis a deployment runs on: one server at REDIS_URL, or a Redis Cluster found from some of its
 * nodes (REDIS_CLUSTER_NODES). BullMQ connects and closes a single server's connections itself; a
 * cluster's clients are made here, one per queue or worker, and closed by `close()`.
 */
export class RedisTarget {
  private readonly cluster?: ClusterSeeds;
  private readonly clients: Cluster[] = [];

  constructor(
    private readonly url: string,
    clusterNodes?: string,
  ) {
    this.cluster = clusterNodes === undefined ? undefined : clusterSeeds(clusterNodes);
  }

  get isCluster(): boolean {
    return this.cluster !== undefined;
  }

  /** For logs and errors: the URL or the seed nodes, with any user and password masked. */
  get printable(): string {
    return this.cluster
      ? `cluster ${this.cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`
      : printableUrl(this.url);
  }

  /** A connection for one BullMQ queue or worker. */
  connection(role: RedisRole): ConnectionOptions {
    if (!this.cluster) return redisOptions(this.url, role);
    const client = new Cluster(this.cluster.nodes, {
      redisOptions: nodeOptions(this.cluster.access, role),
      // A failover takes the cluster node timeout and then some: commands wait for the new master (intake's own
      // timeout bounds how long a delivery waits) instead of failing while the slots move.
      retryDelayOnFailover: 200,
      // A ready check that finds the cluster down reconnects and leaves the pending connect() unsettled (ioredis
      // 5): BullMQ awaits it when it reconnects a worker's blocking client, and that worker would never take a job
      // again. Without it the client is ready once it knows the slots; commands meanwhile retry on CLUSTERDOWN.
      enableReadyCheck: false,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      slotsRefreshTimeout: 2000,
    });
    // Errors surface on the calls that fail; an unhandled 'error' event would end the process.
    client.on('error', () => {});
    this.clients.push(client);
    return client;
  }

  /**
   * Closes the cluster clients made for queues and workers, once those are closed: nothing of theirs is pending,
   * and a QUIT could wait on a cluster that is down.
   */
  close() {
    for (const client of this.clients.splice(0)) client.disconnect();
  }
}

interface ClusterSeeds {
  nodes: Array<{ host: string; port: number }>;
  /** The scheme (TLS or not), user and password of every node. */
  access: URL;
}

/**
 * REDIS_CLUSTER_NODES: `host:port` entries and `redis://`/`rediss://` URLs. The URLs' scheme, user and password go
 * for every node, so they must agree (they may be written on one entry only).
 */
function clusterSeeds(text: string): ClusterSeeds {
  const entries = text.split(',').map((entry) => {
    const isUrl = /^rediss?:\/\//.test(entry);
    const url = URL.canParse(isUrl ? entry : `redis://${entry}`)
      ? new URL(isUrl ? entry : `redis://${entry}`)
      : undefined;
    if (!url?.hostname || (url.pathname.length > 1 && url.pathname !== '/0')) {
      throw new Error(
        `REDIS_CLUSTER_NODES: "${isUrl ? printableUrl(entry) : entry}" is not host:port or a redis:// URL without a database`,
      );
    }
    return { url, isUrl };
  });
  const accesses = entries.filter((entry) => entry.isUrl).map((entry) => entry.url);
  const say = (url: URL) => `${url.protocol}${url.username}:${url.password}`;
  if (new Set(accesses.map(say)).size > 1) {
    throw new Error('REDIS_CLUSTER_NODES: every node must have the same scheme, user and password');
  }
  return {
    nodes: entries.map(({ url }) => ({ host: url.hostname, port: Number(url.port || 6379) })),
    access: accesses[0] ?? new URL('redis://cluster'),
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
