import { readFileSync } from 'node:fs';
import type { Queue } from 'bullmq';
import { type RedisClient, LuaScript } from '../redis/index.ts';
import { DISPATCH_TTL_MS } from './heartbeats.ts';

/** What a run's job carries: its run and the flow version it is pinned to. */
export interface LaneRun {
  tenantId: string;
  runId: string;
  flowId: string;
  flowVersion: number;
  /** Its concurrency key, scoped, and the key's limit (flowControl.concurrency). */
  concurrency?: { key: string; limit: number };
  /** Its debounce key, scoped, and how long it waits for a later run of the key (flowControl.debounce). */
  debounce?: { key: string; periodMs: number; maxWaitMs: number };
  /** Its own priority, 1 (first) to 5 (a bulk replay's); its flow's when absent. */
  priority?: number;
}

/** A run a later run of its debounce key took the place of. */
export interface DebouncedRun {
  tenantId: string;
  runId: string;
  by: string;
}

export interface LaneOptions {
  /** The run queue, whose wait, paused, active, meta and prioritized keys the script reads (BullMQ names them). */
  queue: Pick<Queue, 'keys' | 'toKey'>;
  /** The workers' heartbeats (zset: worker -> last beat) and their slots (hash: worker -> concurrency). */
  workersKey: string;
  workerSlotsKey: string;
  /** How long a run counts against its tenant's and flow's limits without a worker renewing it. */
  leaseMs: number;
  /** Runs of one tenant executing at once unless the tenant has its own limit; 0 for none. */
  tenantConcurrency: number;
  /** Percent of the live slots kept for tenants running fewer than that many runs (fair-dispatch.lua). */
  reservedSlotsPercent: number;
}

/** Most runs one call hands out: bounds the time one script holds Redis. */
const MOST_PER_CALL = 500;
/** A hand-off not confirmed within this long (its dispatcher died) is handed out again. */
const TRANSIT_TIMEOUT_MS = 10_000;

const SCRIPT = new LuaScript('fair-dispatch', readFileSync(new URL('./fair-dispatch.lua', import.meta.url), 'utf8'));

type Operation = 'push' | 'move-in' | 'release' | 'acquire' | 'lease' | 'renew' | 'dispatch' | 'evict' | 'settle';

/**
 * The lanes runs wait in before BullMQ's run queue, one per tenant and flow, and the fair dispatch
 * out of them (fair-dispatch.lua): the run queue holds only what workers are about to take, so a
 * tenant with one waiting run is served within about one run's time whatever others have queued.
 */
export class RunLanes {
  private readonly base: string;
  private readonly keys: string[];
  /** Runs the queue has taken, confirmed with the next call. */
  private confirmed: string[] = [];

  constructor(
    private readonly redis: () => Promise<RedisClient>,
    private readonly options: LaneOptions,
  ) {
    const { queue } = options;
    this.base = queue.toKey('fair');
    this.keys = [
      queue.keys.wait,
      queue.keys.paused,
      queue.keys.active,
      queue.keys.meta,
      options.workersKey,
      options.workerSlotsKey,
      queue.keys.prioritized,
    ];
  }

  /**
   * Queue runs behind their tenant's and flow's earlier ones (and their key's), or in their debounce key's slot;
   * returns those there is room to start now, the runs a later one of their debounce key took the place of, and the
   * ids of those refused because their tenant is moving out of or into this group (the store has them; the move
   * queues them where the tenant goes). `movingIn`: the move's own, queued all the same.
   */
  async push(
    runs: LaneRun[],
    movingIn = false,
  ): Promise<{ now: LaneRun[]; debounced: DebouncedRun[]; refused: string[] }> {
    const items = runs.flatMap((run) => [
      run.tenantId,
      run.flowId,
      run.runId,
      JSON.stringify(run),
      run.concurrency?.key ?? '',
      run.concurrency?.limit ?? 0,
      run.debounce?.key ?? '',
      run.debounce?.periodMs ?? 0,
      run.debounce?.maxWaitMs ?? 0,
      run.priority ?? 0,
    ]);
    const redis = await this.redis();
    const operation = movingIn ? 'move-in' : 'push';
    const [payloads, replaced, refused] = (await SCRIPT.run(redis, this.keys, this.args(operation, items))) as [
      string[],
      string[],
      string[],
    ];
    const debounced: DebouncedRun[] = [];
    for (let i = 0; i < replaced.length; i += 3)
      debounced.push({ tenantId: replaced[i], runId: replaced[i + 1], by: replaced[i + 2] });
    return { now: parsed(payloads), debounced, refused };
  }

  /**
   * A tenant moves out of this group ('out') or into it ('in'): everything its unfinished runs left here (lanes,
   * lines, holds, debounce slots, leases) is forgotten, and until `settle` it is not served here and its runs are
   * refused (fair-dispatch.lua). A group it left keeps it marked 'out', for processes that still send it there.
   */
  async evict(tenantId: string, direction: 'in' | 'out', runs: LaneRun[]): Promise<void> {
    await this.call('evict', [
      tenantId,
      direction,
      ...runs.flatMap((run) => [
        run.tenantId,
        run.flowId,
        run.runId,
        run.concurrency?.key ?? '',
        run.debounce?.key ?? '',
      ]),
    ]);
  }

  /** Mark a tenant moving out of or into this group again, forgetting nothing (its marks went with lost Redis data). */
  async mark(tenantId: string, direction: 'in' | 'out'): Promise<void> {
    await (await this.redis()).hset(`${this.base}:moving`, tenantId, direction);
  }

  /** A tenant's move into this group is over: its runs are served and taken here again; returns those to start now. */
  settle(tenantId: string): Promise<LaneRun[]> {
    return this.call('settle', [tenantId]);
  }

  /**
   * These runs' passes ended: their leases go, and the runs there is now room for are returned. A run that waits
   * (`heldUntil`, when it wakes) keeps its concurrency key; one that ended for good (0) lets the next of its key in.
   */
  release(runs: Array<LaneRun & { heldUntil?: number }>): Promise<LaneRun[]> {
    return this.call(
      'release',
      runs.flatMap((run) => laneArgs(run, run.heldUntil)),
    );
  }

  /** The runs there is room for now. */
  dispatch(): Promise<LaneRun[]> {
    return this.call('dispatch', []);
  }

  /**
   * Runs that come back to a worker without a dispatch (a retry, a takeover) count against the limits again. When
   * they may wait (`deferrable`), the ids of those refused because their tenant holds every slot but the reserved
   * ones are returned, to be deferred.
   */
  async acquire(runs: LaneRun[], deferrable: boolean): Promise<string[]> {
    const redis = await this.redis();
    const operation = deferrable ? 'acquire' : 'lease';
    const items = runs.flatMap((run) => laneArgs(run));
    return (await SCRIPT.run(redis, this.keys, this.args(operation, items))) as string[];
  }

  /** Of a worker's `slots`, how many one tenant's runs may hold: all but the reserved ones (as fair-dispatch.lua keeps). */
  unreserved(slots: number): number {
    return slots - Math.floor((slots * this.options.reservedSlotsPercent) / 100);
  }

  /** Extend the leases of runs still executing (with the worker's heartbeat). */
  async renew(runs: LaneRun[]): Promise<void> {
    if (runs.length > 0)
      await this.call(
        'renew',
        runs.flatMap((run) => laneArgs(run)),
      );
  }

  /** The queue has these jobs now: they are no longer in transit (said with the next call). */
  confirm(runIds: string[]) {
    this.confirmed.push(...runIds);
  }

  /** Whether hand-offs wait to be confirmed. */
  get unconfirmed(): boolean {
    return this.confirmed.length > 0;
  }

  /** For each run, whether it waits in a lane (or is being handed to the queue). */
  async holds(runIds: string[]): Promise<boolean[]> {
    if (runIds.length === 0) return [];
    const redis = await this.redis();
    const pipeline = redis.pipeline();
    for (const id of runIds) pipeline.hexists(`${this.base}:jobs`, id);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, found]) => {
      if (error) throw error;
      return found === 1;
    });
  }

  /**
   * A tenant's own weight and concurrency in place of the defaults (left out: the default). Read by
   * every dispatch from then on.
   */
  async share(tenantId: string, share: { weight?: number; concurrency?: number }): Promise<void> {
    const redis = await this.redis();
    const set = (key: string, value: number | undefined) =>
      value === undefined ? redis.hdel(key, tenantId) : redis.hset(key, tenantId, value);
    await Promise.all([set(`${this.base}:weight`, share.weight), set(`${this.base}:tenant-limit`, share.concurrency)]);
  }

  /**
   * A flow's concurrency and priority (its active version's), read by every dispatch from then on: none and 3 when
   * undefined.
   */
  async flowSettings(tenantId: string, flowId: string, settings: { concurrency?: number; priority?: number }) {
    const redis = await this.redis();
    const field = `${tenantId}:${flowId}`;
    const set = (key: string, value: number | undefined) =>
      value === undefined ? redis.hdel(key, field) : redis.hset(key, field, value);
    const priority = settings.priority === 3 ? undefined : settings.priority;
    await Promise.all([
      set(`${this.base}:flow-limit`, settings.concurrency),
      set(`${this.base}:flow-priority`, priority),
    ]);
  }

  /** Runs waiting for a concurrency key (in its line) or a debounce period (in its slot), by tenant and kind. */
  async keyedWaiting(): Promise<Array<{ tenantId: string; kind: 'concurrency_key' | 'debounce'; runs: number }>> {
    const counts = await (await this.redis()).hgetall(`${this.base}:keyed-waiting`);
    return Object.entries(counts).map(([field, runs]) => {
      const at = field.lastIndexOf(':');
      const kind = field.slice(at + 1) as 'concurrency_key' | 'debounce';
      return { tenantId: field.slice(0, at), kind, runs: Number(runs) };
    });
  }

  /** The hash of runs waiting in lanes by tenant. */
  get backlogKey(): string {
    return `${this.base}:backlog`;
  }

  /** Runs waiting in lanes, by tenant (tenants with none are left out). */
  async backlog(): Promise<Record<string, number>> {
    const counts = await (await this.redis()).hgetall(this.backlogKey);
    return Object.fromEntries(Object.entries(counts).map(([tenant, count]) => [tenant, Number(count)]));
  }

  private async call(operation: Operation, items: Array<string | number>): Promise<LaneRun[]> {
    const redis = await this.redis();
    return parsed((await SCRIPT.run(redis, this.keys, this.args(operation, items))) as string[]);
  }

  private args(operation: Operation, items: Array<string | number>) {
    const { options } = this;
    // If the call fails they are handed out again after TRANSIT_TIMEOUT_MS: adding them twice does nothing.
    const confirmed = this.confirmed;
    this.confirmed = [];
    return [
      this.base,
      Date.now(),
      options.leaseMs,
      DISPATCH_TTL_MS,
      1,
      options.tenantConcurrency,
      MOST_PER_CALL,
      TRANSIT_TIMEOUT_MS,
      confirmed.length,
      options.reservedSlotsPercent,
      operation,
      ...confirmed,
      ...items,
    ];
  }
}

const parsed = (payloads: string[]) => payloads.map((payload) => JSON.parse(payload) as LaneRun);

const laneArgs = (run: LaneRun, heldUntil = 0) => [
  run.tenantId,
  run.flowId,
  run.runId,
  run.concurrency?.key ?? '',
  heldUntil,
];
