import type { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { lastRecovery, type RecoveryReport } from './recovery.ts';
import { type RunJobData, heartbeatKey, HEARTBEAT_TTL_MS } from '../queue/index.ts';
import { ioredisOf, slotOfKey } from '../redis/index.ts';

export interface QueueReport {
  redis: 'ok' | string;
  maxmemoryPolicy: string;
  liveWorkers: number;
  /** Jobs handed to workers and not taken yet (the tenants' backlogs wait in their lanes, not here). */
  waiting: number;
  /** How long the oldest of them has waited: minutes mean workers stopped taking jobs. */
  oldestWaitingMs: number;
  /** The last recovery from lost Redis data, while it runs and for a day after. */
  recovery?: RecoveryReport;
  /** On a Redis Cluster: its state (`ok` when every slot is served) and the nodes serving the slots. */
  cluster?: ClusterReport;
}

export interface ClusterReport {
  state: string;
  slotsOk: number;
  /** Masters serving slots, replicas, and nodes the cluster holds as failing (a killed master stays listed). */
  masters: number;
  replicas: number;
  failing: number;
  /** Each group of the run path (RUN_GROUPS): its queue, the slot of its keys, and the master serving it (host:port). */
  groups: Array<{ queue: string; slot: number; master?: string }>;
}

/** What readiness reports of Redis and the run queue (every group's). */
export async function inspectQueue(queues: Queue<RunJobData>[], prefix: string): Promise<QueueReport> {
  const [queue] = queues;
  const client = await ioredisOf(queue.client);
  await client.ping();
  // Managed Redis may forbid CONFIG: report it rather than fail.
  const policy = await client.config('GET', 'maxmemory-policy').then(
    (reply: unknown) => String((reply as string[])[1]),
    () => 'unknown (CONFIG not allowed)',
  );
  // Workers beat in every group of the run path: the first's count is theirs.
  const liveWorkers = await client.zcount(heartbeatKey(queue), Date.now() - HEARTBEAT_TTL_MS, '+inf');
  let waiting = 0;
  let oldestAt = Number.POSITIVE_INFINITY;
  for (const group of queues) {
    const inGroup = await group.getWaitingCount();
    const [oldest] = inGroup > 0 ? await group.getJobs(['wait'], 0, 0, true) : [];
    waiting += inGroup;
    if (oldest) oldestAt = Math.min(oldestAt, oldest.timestamp);
  }
  const recovery = await lastRecovery(client, prefix);
  // BullMQ hands out its own proxy of the client: ask it, not `instanceof`.
  const cluster = client.isCluster
    ? await inspectCluster(
        client as Cluster,
        queues.map((group) => ({ queue: group.name, slot: slotOfKey(group.toKey('')) })),
      )
    : undefined;
  return {
    redis: 'ok',
    maxmemoryPolicy: policy,
    liveWorkers,
    waiting,
    oldestWaitingMs: Number.isFinite(oldestAt) ? Date.now() - oldestAt : 0,
    ...(recovery && { recovery }),
    ...(cluster && { cluster }),
  };
}

/** The cluster as one of its nodes sees it: CLUSTER INFO's state, CLUSTER NODES' roles and the masters of `groups`. */
async function inspectCluster(
  cluster: Cluster,
  groups: Array<{ queue: string; slot: number }>,
): Promise<ClusterReport> {
  const [info, nodes] = await Promise.all([cluster.cluster('INFO'), cluster.cluster('NODES')]);
  const field = (name: string) => new RegExp(`${name}:(\\w+)`).exec(String(info))?.[1] ?? 'unknown';
  // Each line: id, address (host:port@bus), flags, master id, ping, pong, epoch, link, slots ("0-5460", "5461", or
  // "[...]" for one being moved).
  const rows = String(nodes)
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
    .map(([, address, flags, , , , , , ...slots]) => ({
      address: address.split('@')[0],
      flags: flags.split(','),
      slots: slots.filter((range) => !range.startsWith('[')).map((range) => range.split('-').map(Number)),
    }));
  const failing = (row: { flags: string[] }) => row.flags.some((flag) => flag === 'fail' || flag === 'fail?');
  const masters = rows.filter((row) => row.flags.includes('master') && row.slots.length > 0 && !failing(row));
  const masterOf = (slot: number) =>
    masters.find((row) => row.slots.some(([from, to = from]) => from <= slot && slot <= to))?.address;
  return {
    state: field('cluster_state'),
    slotsOk: Number(field('cluster_slots_ok')),
    masters: masters.length,
    replicas: rows.filter((row) => row.flags.includes('slave') && !failing(row)).length,
    failing: rows.filter(failing).length,
    groups: groups.map((group) => ({ ...group, master: masterOf(group.slot) })),
  };
}
