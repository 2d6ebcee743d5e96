/**
 * `npm run drill`: failover drills on a deployment of several hosts. Two API hosts and two worker hosts
 * (network namespaces of their own where this machine allows it, else processes on ports of their own), one
 * PostgreSQL, and a Redis Cluster of 3 masters with a replica each. Under a steady load of webhooks, each
 * with its own Idempotency-Key, through a flow that posts each order to an ERP stand-in, each drill breaks
 * one thing, mends it, and counts: accepted, delivered, re-sent with the same key, re-sent with another key
 * (a duplicate side effect: must be 0), lost (must be 0), and how long recovery took.
 * Needs root for the namespaces (iproute2), redis-server and redis-cli, and PostgreSQL as `npm test` does.
 * DRILL_DELIVERIES (200) a drill, at DRILL_RATE (40) a second. Exits non-zero if any message was lost or
 * any side effect was doubled.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { storeAdmin } from '../../bin/admin.ts';
import { loadConfig } from '../../bin/config/config.ts';
import { openStore } from '../../bin/platform.ts';
import { runsSlot } from '../../engine/redis/key-slots.ts';
import { Keyring } from '../../engine/secrets/keyring.ts';
import type { Store } from '../../engine/store/index.ts';
import { ApiClient, dropIsolation, getToken, POSTGRES_URL } from '../support/harness.ts';
import { forwardWebhook } from '../support/flow-documents.ts';
import { Receiver } from '../support/receiver.ts';
import { freePortRun, LocalRedisCluster } from '../support/redis-cluster.ts';
import { deliveryCounts, longestGapMs, WebhookSender } from '../support/webhook-sender.ts';
import { type Host, localHost, NamespaceNetwork } from './hosts.ts';

const DELIVERIES = Number(process.env.DRILL_DELIVERIES ?? 200);
const RATE = Number(process.env.DRILL_RATE ?? 40);
/** Short, so that a dead worker's jobs are taken over within seconds; production defaults are 30 s each. */
const LOCK_MS = 4000;
const STALLED_MS = 2000;
const ERP_MS = 400;
const FINAL = new Set(['succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled']);
const LOGS = path.join(os.tmpdir(), 'tributary-drill');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Drill {
  name: string;
  /** Deliveries a second, if not DRILL_RATE. */
  rate?: number;
  /** Break something; resolves when it is broken (or, for a failover, taken over). */
  disrupt: () => Promise<void>;
  /** Put it back. */
  mend: () => Promise<void>;
}

interface DrillResult {
  drill: string;
  accepted: number;
  delivered: number;
  resentSameKey: number;
  resentOtherKey: number;
  lost: number;
  senderRetries: number;
  /** Retries answered `200 duplicate`: the platform had accepted the first try, whose answer was lost. */
  answeredDuplicate: number;
  /** The longest time without an accepted delivery, from the disruption on (as the sender saw it). */
  intakeGapMs: number;
  /** The longest a message of the drill waited from its acceptance until its run had finished. */
  slowestRunMs: number;
}

/** One process of the deployment on a host: started again on the same host after a drill kills it. */
class Service {
  constructor(
    readonly host: Host,
    private readonly role: 'api' | 'worker',
    private readonly env: Record<string, string>,
    readonly port?: number,
  ) {}

  get url(): string {
    return `http://${this.host.address}:${this.port}`;
  }

  async start(): Promise<void> {
    const log = createWriteStream(path.join(LOGS, `${this.host.name}.log`), { flags: 'a' });
    const child = this.host.spawn([process.execPath, 'bin/tributary.js', this.role], {
      ...this.env,
      ...(this.port === undefined ? {} : { PORT: String(this.port), HOST: this.host.address }),
    });
    child.stdout!.pipe(log);
    let output = '';
    const ready = new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        log.write(chunk);
        output = (output + chunk.toString()).slice(-4000);
        if (output.includes('worker consuming')) resolve();
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`${this.host.name} exited (${code ?? signal}): ${output}`)),
      );
    });
    // An API process is up when it answers; a process that exits first fails the start.
    await Promise.race([ready, ...(this.role === 'api' ? [this.untilHealthy()] : [])]);
  }

  private async untilHealthy() {
    for (let tries = 0; tries < 600; tries++) {
      const answer = await fetch(`${this.url}/healthz`).catch(() => undefined);
      if (answer?.ok) return;
      await sleep(100);
    }
    throw new Error(`${this.host.name} did not answer /healthz`);
  }
}

/** Waits until every run has a final status (or `limitMs` passed); says how many did not, and the slowest run. */
async function untilFinished(
  store: Store,
  runIds: string[],
  limitMs = 180_000,
): Promise<{ unfinished: number; slowestRunMs: number }> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const runs = await Promise.all(runIds.map((id) => store.getRun('acme', id)));
    const unfinished = runs.filter((found) => !found || !FINAL.has(found.run.status)).length;
    if (unfinished === 0 || Date.now() > deadline) {
      const took = runs.map((found) =>
        found?.run.finishedAt ? Date.parse(found.run.finishedAt) - Date.parse(found.run.createdAt) : 0,
      );
      return { unfinished, slowestRunMs: Math.max(...took) };
    }
    await sleep(500);
  }
}

/** PostgreSQL listens on loopback; hosts in namespaces reach it at the bridge's address through this. */
async function forwardPostgres(address: string): Promise<net.Server> {
  const target = new URL(POSTGRES_URL);
  const server = net.createServer((socket) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    socket.pipe(upstream).pipe(socket);
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(Number(target.port || 5432), address, resolve),
  );
  return server;
}

async function freePort(host: string): Promise<number> {
  const server = net.createServer().listen(0, host);
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function main(): Promise<number> {
  mkdirSync(LOGS, { recursive: true });
  const network = NamespaceNetwork.create();
  const gateway = network?.gateway ?? '127.0.0.1';
  console.log(
    network
      ? `hosts: network namespaces with their own addresses, on a bridge at ${gateway}/24; a cut is the host's link set down`
      : 'hosts: processes on 127.0.0.1 on ports of their own (network namespaces are not allowed here); a cut is a freeze (SIGSTOP)',
  );
  console.log(`process logs: ${LOGS}`);
  const closing: Array<() => unknown> = [];
  try {
    if (network) closing.push(() => network.destroy());
    const cluster = await LocalRedisCluster.start({
      host: gateway,
      basePort: await freePortRun(6),
      nodeTimeoutMs: 1000,
    });
    closing.push(() => cluster.stop());
    if (network) {
      const forwarder = await forwardPostgres(gateway);
      closing.push(() => forwarder.close());
    }
    const receiver = await new Receiver().start(gateway);
    // An ERP that takes its time: at the drills' rate, some 15 runs are in flight on the workers at any moment.
    receiver.slow('/erp', ERP_MS);
    closing.push(() => receiver.close());

    const suffix = randomBytes(4).toString('hex');
    const database = new URL(POSTGRES_URL);
    const shared = {
      DATABASE_URL: POSTGRES_URL,
      DATABASE_SCHEMA: `drill_${suffix}`,
      SECRETS_KEY: Keyring.generateEntry('drill'),
      REDIS_CLUSTER_NODES: cluster.seeds,
      REDIS_PREFIX: `drill-${suffix}`,
      OUTBOUND_PRIVATE_ADDRESSES: 'allow',
      WORKER_LOCK_MS: String(LOCK_MS),
      WORKER_STALLED_INTERVAL_MS: String(STALLED_MS),
      WORKER_CONCURRENCY: '16',
      TENANT_DELIVERIES_PER_SECOND: '100000',
      TENANT_DELIVERY_BURST: '100000',
      PUBLIC_URL: 'http://tributary.drill.test',
      LOG_LEVEL: 'warn',
    };
    // The hosts' processes reach PostgreSQL at the bridge's address.
    database.hostname = gateway;
    const hostsEnv = { ...shared, DATABASE_URL: database.toString() };
    const config = loadConfig(shared);
    // Migrates the schema before the hosts start, and reads the runs' outcomes.
    const { store } = await openStore(config);
    closing.push(async () => {
      await store.close();
      await dropIsolation(config);
    });

    const host = (name: string, number: number) => network?.host(name, number) ?? localHost(name);
    const apiPort = async () => (network ? 3000 : await freePort('127.0.0.1'));
    const apis = [
      new Service(host('api1', 11), 'api', hostsEnv, await apiPort()),
      new Service(host('api2', 12), 'api', hostsEnv, await apiPort()),
    ];
    const workers = [
      new Service(host('worker1', 21), 'worker', hostsEnv),
      new Service(host('worker2', 22), 'worker', hostsEnv),
    ];
    closing.push(() => {
      for (const service of [...apis, ...workers]) service.host.kill();
    });
    await Promise.all([...apis, ...workers].map((service) => service.start()));

    const admin = storeAdmin(store);
    await admin.createTenant({ id: 'acme' });
    const credentials = await admin.createClient({ tenantId: 'acme' });
    const token = await getToken(apis[0].url, credentials.client_id, credentials.client_secret);
    await new ApiClient(apis[0].url, token, 'acme', credentials).publish(
      forwardWebhook('orders', `${receiver.url}/erp`),
    );
    const sender = new WebhookSender(() => apis.map((api) => api.url), { tenantId: 'acme', flowKey: 'orders' });

    let killed: number[] = [];
    const drills: Drill[] = [
      // What the figures are without a fault, to read the others by.
      { name: 'no fault', disrupt: async () => {}, mend: async () => {} },
      {
        name: "kill -9 the run queue's Redis master",
        disrupt: async () => {
          killed = [await cluster.masterOf(runsSlot(config.redisPrefix))];
          cluster.kill(killed[0]);
          await cluster.untilFailedOver(killed[0]);
        },
        // It comes back empty and rejoins as a replica.
        mend: async () => {
          await cluster.restart(killed[0]);
          await cluster.untilServing();
        },
      },
      {
        name: "kill -9 the run queue's shard (master and replica), back empty 3 s later",
        disrupt: async () => {
          const master = await cluster.masterOf(runsSlot(config.redisPrefix));
          killed = [master, ...(await cluster.replicasOf(master))];
          for (const port of killed) cluster.kill(port);
          await sleep(3000);
          for (const port of killed) await cluster.restart(port);
          await cluster.untilServing();
        },
        mend: async () => {},
      },
      {
        name: 'kill -9 a worker host',
        disrupt: async () => workers[0].host.kill(),
        mend: () => workers[0].start(),
      },
      {
        name: `cut a worker host off the network for ${(3 * STALLED_MS + LOCK_MS) / 1000} s`,
        disrupt: async () => {
          workers[1].host.cut();
          await sleep(3 * STALLED_MS + LOCK_MS);
        },
        mend: async () => workers[1].host.restore(),
      },
      {
        // Fast, so that deliveries are in flight at the host when it dies.
        name: 'kill -9 an API host while deliveries are in flight (1,000/s)',
        rate: 1000,
        disrupt: async () => apis[0].host.kill(),
        mend: () => apis[0].start(),
      },
    ];

    const results: DrillResult[] = [];
    let next = 0;
    for (const drill of drills) {
      const from = next;
      next += DELIVERIES;
      const rate = drill.rate ?? RATE;
      console.log(`\n${drill.name}: ${DELIVERIES} deliveries at ${rate}/s`);
      const load = sender.send(from, DELIVERIES, rate);
      // A third of the way into the load.
      await sleep((DELIVERIES / rate / 3) * 1000);
      const brokenAt = Date.now();
      await drill.disrupt();
      await drill.mend();
      const sent = await load;
      const runIds = [...new Set(sent.runIds)];
      const { unfinished, slowestRunMs } = await untilFinished(store, runIds);
      const counts = deliveryCounts(receiver, '/erp', from, DELIVERIES);
      const result: DrillResult = {
        drill: drill.name,
        accepted: runIds.length,
        ...counts,
        lost: counts.lost + unfinished,
        senderRetries: sent.retries,
        answeredDuplicate: sent.duplicates,
        intakeGapMs: longestGapMs(sent.acceptedAt, brokenAt),
        slowestRunMs,
      };
      results.push(result);
      console.log(JSON.stringify(result));
    }

    console.log(
      '\n| drill | accepted | delivered | re-sent, same key | re-sent, other key | lost | sender retries ' +
        '(answered duplicate) | longest intake gap | slowest run |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(
        `| ${r.drill} | ${r.accepted} | ${r.delivered} | ${r.resentSameKey} | ${r.resentOtherKey} | ${r.lost} | ` +
          `${r.senderRetries} (${r.answeredDuplicate}) | ${(r.intakeGapMs / 1000).toFixed(1)} s | ${(r.slowestRunMs / 1000).toFixed(1)} s |`,
      );
    }
    const failed = results.filter((r) => r.lost > 0 || r.resentOtherKey > 0 || r.accepted !== DELIVERIES);
    for (const r of failed)
      console.error(`FAILED: ${r.drill}: lost ${r.lost}, doubled ${r.resentOtherKey}, accepted ${r.accepted}`);
    return failed.length > 0 ? 1 : 0;
  } finally {
    for (const close of closing.reverse()) await Promise.resolve(close()).catch((error) => console.error(error));
  }
}

process.exitCode = await main();
