import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/**
 * The first of `count` ports in a row that are free, with their cluster bus ports (10000 above), all below the
 * ephemeral range (32768 up), where an outgoing connection could take one meanwhile.
 */
export async function freePortRun(count: number): Promise<number> {
  for (;;) {
    const base = 10_000 + Math.floor(Math.random() * 1_200) * 10;
    const ports = Array.from({ length: count }, (_, index) => [base + index, base + index + 10_000]).flat();
    if ((await Promise.all(ports.map(portIsFree))).every(Boolean)) return base;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export interface ClusterNode {
  port: number;
  /** The redis-server process; undefined once killed. */
  child?: ChildProcess;
}

export interface LocalClusterOptions {
  /** The address every node listens on and announces. */
  host?: string;
  /** Ports from here up, one per node (each node's cluster bus is 10000 above). */
  basePort: number;
  masters?: number;
  replicasPerMaster?: number;
  /** How long a master may not answer before its replica takes over. */
  nodeTimeoutMs?: number;
}

/**
 * A Redis Cluster of redis-server processes on this machine (Debian's package), for tests and drills:
 * masters with a replica each, no persistence (a node killed and started again comes back empty, as a
 * replica), failover after `nodeTimeoutMs`.
 */
export class LocalRedisCluster {
  private constructor(
    readonly host: string,
    readonly nodes: ClusterNode[],
    private readonly dir: string,
    private readonly nodeTimeoutMs: number,
  ) {}

  static async start(options: LocalClusterOptions): Promise<LocalRedisCluster> {
    const { host = '127.0.0.1', basePort, masters = 3, replicasPerMaster = 1, nodeTimeoutMs = 1000 } = options;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-cluster-'));
    const ports = Array.from({ length: masters * (1 + replicasPerMaster) }, (_, index) => basePort + index);
    const cluster = new LocalRedisCluster(
      host,
      ports.map((port) => ({ port })),
      dir,
      nodeTimeoutMs,
    );
    // A test or drill that ends without stopping the cluster (a timeout, an exception) leaves no redis-server behind.
    process.once('exit', () => {
      for (const node of cluster.nodes) node.child?.kill('SIGKILL');
    });
    try {
      for (const node of cluster.nodes) cluster.launch(node);
      await Promise.all(cluster.nodes.map((node) => cluster.untilAnswers(node.port)));
      await run('redis-cli', [
        '--cluster',
        'create',
        ...ports.map((port) => `${host}:${port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ]);
      await cluster.untilServing();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** REDIS_CLUSTER_NODES for this cluster. */
  get seeds(): string {
    return this.nodes.map((node) => `${this.host}:${node.port}`).join(',');
  }

  /** The port of the master serving `key`'s slot now. */
  async masterOf(key: string): Promise<number> {
    return this.ask(async (redis) => {
      const slot = Number(await redis.cluster('KEYSLOT', key));
      const master = (await this.topology(redis)).find(
        (node) => node.master && node.slots.some(([from, to]) => from <= slot && slot <= to),
      );
      if (!master) throw new Error(`no master serves slot ${slot}`);
      return master.port;
    });
  }

  /** Masters and replicas as the cluster itself sees them (healthy ones only). */
  async roles(): Promise<{ masters: number[]; replicas: number[] }> {
    return this.ask(async (redis) => {
      const nodes = (await this.topology(redis)).filter((node) => node.healthy);
      return {
        masters: nodes.filter((node) => node.master && node.slots.length > 0).map((node) => node.port),
        replicas: nodes.filter((node) => !node.master).map((node) => node.port),
      };
    });
  }

  /** The ports of the replicas of the master at `port`. */
  async replicasOf(port: number): Promise<number[]> {
    return this.ask(async (redis) => {
      const nodes = await this.topology(redis);
      const master = nodes.find((node) => node.port === port);
      return nodes.filter((node) => node.masterId === master?.id).map((node) => node.port);
    });
  }

  /** kill -9 one node. */
  kill(port: number) {
    const node = this.node(port);
    node.child?.kill('SIGKILL');
    node.child = undefined;
  }

  /** Start a killed node again: it comes back without data and rejoins (as a replica, once failed over). */
  async restart(port: number) {
    // A replica keeps the snapshot of its last full sync in its dump file and would load it: a stale copy of the
    // data, whose keys (an epoch, a recovery report) would hide the loss.
    rmSync(path.join(this.dir, `dump-${port}.rdb`), { force: true });
    this.launch(this.node(port));
    await this.untilAnswers(port);
  }

  /** Until every slot has a master that answers, as every live node sees it. */
  async untilServing(limitMs = 60_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const states = await Promise.all(
        this.nodes
          .filter((node) => node.child)
          .map((node) => this.onNode(node.port, async (redis) => String(await redis.cluster('INFO')))),
      );
      if (states.every((info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384'))) return;
      if (Date.now() > deadline) throw new Error(`the cluster is not serving every slot after ${limitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Until a replica has taken the place of the killed master at `port` and every slot is served again. */
  async untilFailedOver(port: number, limitMs = 60_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    const masters = this.nodes.length / 2;
    for (;;) {
      const roles = await this.roles().catch(() => undefined);
      if (roles && !roles.masters.includes(port) && roles.masters.length === masters) break;
      if (Date.now() > deadline) throw new Error(`no replica took over from ${port} within ${limitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.untilServing(Math.max(0, deadline - Date.now()));
  }

  async stop() {
    for (const node of this.nodes) this.kill(node.port);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private launch(node: ClusterNode) {
    // biome-ignore format: one option and its value a line
    node.child = spawn('redis-server', [
      '--port', String(node.port),
      '--bind', this.host,
      // Off loopback (a drill's bridge), protected mode would refuse every client: the network is this machine's own.
      '--protected-mode', 'no',
      '--dir', this.dir,
      '--dbfilename', `dump-${node.port}.rdb`,
      '--cluster-enabled', 'yes',
      '--cluster-config-file', `nodes-${node.port}.conf`,
      '--cluster-node-timeout', String(this.nodeTimeoutMs),
      // A replica takes over however long it was apart from its master: the drills want the failover.
      '--cluster-replica-validity-factor', '0',
      '--appendonly', 'no',
      '--save', '',
      '--maxmemory-policy', 'noeviction',
    ], { stdio: 'ignore' });
  }

  private node(port: number): ClusterNode {
    const node = this.nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no node on port ${port}`);
    return node;
  }

  private async untilAnswers(port: number) {
    const { child } = this.node(port);
    for (let tries = 0; tries < 200; tries++) {
      if (await this.onNode(port, (redis) => redis.ping()).catch(() => false)) return;
      if (child?.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`redis-server on ${this.host}:${port} did not start (exit code ${child?.exitCode})`);
  }

  /** Ask the first live node that answers. */
  private async ask<T>(question: (redis: Redis) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const node of this.nodes.filter((candidate) => candidate.child)) {
      try {
        return await this.onNode(node.port, question);
      } catch (error) {
        last = error;
      }
    }
    throw last;
  }

  private async onNode<T>(port: number, question: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = new Redis({
      host: this.host,
      port,
      lazyConnect: true,
      retryStrategy: () => null,
      connectTimeout: 1000,
    });
    redis.on('error', () => {});
    try {
      await redis.connect();
      return await question(redis);
    } finally {
      redis.disconnect();
    }
  }

  /** CLUSTER NODES, parsed: each node's port, role, health and slot ranges. */
  private async topology(redis: Redis) {
    const text = String(await redis.cluster('NODES'));
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
        return {
          id,
          masterId,
          port: Number(address.split('@')[0].split(':').pop()),
          master: flags.split(',').includes('master'),
          healthy: !/fail|handshake|noaddr/.test(flags),
          slots: slots
            .filter((range) => !range.startsWith('['))
            .map((range) => range.split('-').map(Number))
            .map(([from, to]) => [from, to ?? from] as const),
        };
      });
  }
}
