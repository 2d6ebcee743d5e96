import type { Logger } from 'pino';
import { ConflictError, NotFoundError, ValidationError, newId } from '../model/index.ts';
import { ioredisOf, SingleFlight } from '../redis/index.ts';
import type { RunPlacement, RunStore, TenantStore, UnfinishedRun } from '../store/index.ts';
import { type RunGroup, type RunQueue, runJob } from './run-queue.ts';

/** Where a tenant's runs go, and the move under way if there is one. */
export type TenantPlacement = Omit<RunPlacement, 'draining'>;

/** Unfinished runs read a page at a time. */
const PAGE = 500;
/** How long a process may take one step of a move before another may take it over. */
const LOCK_MS = 60_000;
/** Job states in which a run still waits to execute: its job is taken out of the group its tenant leaves. */
const WAITING = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

export interface TenantMovesOptions {
  /** Write the tenant's own limits and its active flows' settings in the group its runs now go to. */
  place: (tenantId: string) => Promise<void>;
  logger: Logger;
}

/**
 * An operator moves a tenant (or one of its environments) to another slot group of the run path while it runs: a
 * tenant heavy enough to fill a master alone gets one, with no restart and its limits exact throughout.
 *
 * A move drains, then switches. It marks the tenant moving in both groups: neither serves it nor takes its new runs,
 * which stay in the store (accepted as ever) for the move to queue. The runs it had waiting in the group it leaves
 * are forgotten there, and their jobs (runs waiting for their time) taken out; the runs executing there finish.
 * When none is left, its runs (all in the store) are queued in the new group, oldest first, so that a concurrency
 * key is held by the runs that held it before, and the new group serves the tenant from then on. Its runs pause
 * meanwhile: about as long as its longest pass executing when the move began.
 *
 * Every step can be taken again, by any worker process (`advance`, on a timer): a move survives the process that
 * began it.
 */
export class TenantMoves {
  private timer?: NodeJS.Timeout;
  private readonly rounds = new SingleFlight(
    () => this.advance(),
    (error) => this.options.logger.warn({ err: error }, 'could not look at the moves of tenants'),
  );

  constructor(
    private readonly queue: RunQueue,
    private readonly store: Pick<RunStore, 'listUnfinishedRuns' | 'debounceRuns'> &
      Pick<TenantStore, 'getTenant' | 'listRunPlacements' | 'saveRunPlacement'>,
    private readonly options: TenantMovesOptions,
  ) {}

  /** How many slot groups the run path has (RUN_GROUPS). */
  get groups(): number {
    return this.queue.groups.length;
  }

  /** Begin moving a tenant's runs to `group`; a tenant there already stays. */
  async move(tenantId: string, group: number): Promise<TenantPlacement> {
    const { groups } = this;
    if (!Number.isInteger(group) || group < 0 || group >= groups)
      throw new ValidationError('no such slot group', [
        { path: '$.group', message: `is ${group}; the groups are 0 to ${groups - 1} (RUN_GROUPS=${groups})` },
      ]);
    if (!(await this.store.getTenant(tenantId))) throw new NotFoundError(`no tenant or environment ${tenantId}`);
    const lock = await this.lock(tenantId);
    if (!lock) throw new ConflictError(`tenant ${tenantId} is being moved by another request; ask again`);
    try {
      const current = await this.stored(tenantId);
      if (current?.movingFrom != null) {
        if (current.group === group) return shown(current);
        throw new ConflictError(
          `tenant ${tenantId} is moving to group ${current.group} since ${current.since}: move it again once that is done`,
        );
      }
      await this.queue.refreshPlacements();
      const from = this.queue.groupOf(tenantId).index;
      if (from === group) return shown({ tenantId, group, movingFrom: null, since: null, draining: false });
      const moving = { tenantId, group, movingFrom: from, since: new Date().toISOString(), draining: false };
      await this.store.saveRunPlacement(moving);
      this.options.logger.info({ tenantId, from, to: group }, 'moving a tenant to another slot group of the run path');
      return shown(moving);
    } finally {
      await lock.release();
    }
  }

  /** Where a tenant's runs go, and the move under way. */
  async placement(tenantId: string): Promise<TenantPlacement> {
    const stored = await this.stored(tenantId);
    if (stored) return shown(stored);
    return { tenantId, group: this.queue.groupOf(tenantId).index, movingFrom: null, since: null };
  }

  /** The tenants operators moved, and those moving. */
  async list(): Promise<TenantPlacement[]> {
    return (await this.store.listRunPlacements()).map(shown);
  }

  /**
   * After a loss of Redis data, which took the marks along, before the lost runs are queued again: each moved tenant
   * is marked `out` of every group but its own (a process that has not seen its move is refused there, and sends
   * its runs on), and a tenant moving, in both its groups (its move goes on from where it was).
   */
  async restoreMarks(): Promise<void> {
    for (const { tenantId, group, movingFrom } of await this.store.listRunPlacements()) {
      const marks = this.queue.groups.map((other) =>
        other.index !== group
          ? other.lanes.mark(tenantId, 'out')
          : movingFrom !== null && other.lanes.mark(tenantId, 'in'),
      );
      await Promise.all(marks);
    }
  }

  /** Take the moves under way further every `intervalMs` (worker processes; none with one group). */
  start(intervalMs: number) {
    if (this.queue.groups.length > 1) this.timer = setInterval(() => void this.rounds.run(), intervalMs).unref();
  }

  /** Stops the looks, after the one under way. */
  async close() {
    clearInterval(this.timer);
    await this.rounds.settled();
  }

  /** Take each move under way a step further (by the first process to look at it). */
  async advance(): Promise<void> {
    for (const { tenantId, movingFrom } of await this.store.listRunPlacements()) {
      if (movingFrom === null) continue;
      const lock = await this.lock(tenantId);
      if (!lock) continue;
      try {
        // Read again under the lock: another process may have ended it.
        const move = await this.stored(tenantId);
        if (move?.movingFrom != null) await this.step({ ...move, movingFrom: move.movingFrom });
      } catch (error) {
        this.options.logger.warn({ err: error, tenantId }, 'could not take a move of a tenant further');
      } finally {
        await lock.release();
      }
    }
  }

  private async step(move: RunPlacement & { movingFrom: number }) {
    const { tenantId } = move;
    const from = this.queue.groups[move.movingFrom];
    const to = this.queue.groups[move.group];
    if (!move.draining) {
      let runs = 0;
      for await (const page of this.unfinished(tenantId)) {
        const jobs = page.map(runJob);
        await from.lanes.evict(tenantId, 'out', jobs);
        await to.lanes.evict(tenantId, 'in', jobs);
        runs += page.length;
      }
      // A tenant with no unfinished run is marked all the same.
      if (runs === 0) await Promise.all([from.lanes.evict(tenantId, 'out', []), to.lanes.evict(tenantId, 'in', [])]);
      await this.store.saveRunPlacement({ ...move, draining: true });
    }
    if (!(await this.drained(tenantId, from))) return;
    // Marked in both groups, its runs are routed to the new one (RunQueue.refreshPlacements): its limits go there.
    await this.queue.refreshPlacements();
    await this.options.place(tenantId);
    // A job the group it leaves took after the look above (a hand-off under way when it was marked): not yet.
    if (!(await this.queueIn(tenantId, from, to, true))) return;
    await to.settle(tenantId);
    await this.store.saveRunPlacement({ tenantId, group: move.group, movingFrom: null, since: null, draining: false });
    await this.queue.refreshPlacements();
    // Runs the new group refused between the look above and `settle`: their push came after they were stored.
    await this.queueIn(tenantId, from, to, false);
    this.options.logger.info(
      { tenantId, from: move.movingFrom, to: move.group, since: move.since },
      'a tenant moved to another slot group of the run path',
    );
  }

  /**
   * Whether none of the tenant's runs is left in the group it leaves: those waiting there (for their time, or for a
   * worker) are taken out, and none is executing.
   */
  private async drained(tenantId: string, from: RunGroup): Promise<boolean> {
    let executing = 0;
    for await (const page of this.unfinished(tenantId)) {
      const states = await Promise.all(page.map((run) => from.queue.getJobState(run.id)));
      const removed = await Promise.all(
        page.map((run, index) => (WAITING.has(states[index]) ? from.queue.remove(run.id) : 1)),
      );
      // A job a worker took meanwhile is not removed (0): it is executing.
      executing += states.filter((state, index) => state === 'active' || removed[index] === 0).length;
    }
    return executing === 0;
  }

  /**
   * Queue the tenant's unfinished runs that are in neither group (a tenant's runs are in no other) in its new group,
   * oldest first. While it moves in (`movingIn`), false, queueing no more, when one waits or executes in the group
   * it leaves still; after, none can be there.
   */
  private async queueIn(tenantId: string, from: RunGroup, to: RunGroup, movingIn: boolean): Promise<boolean> {
    const stateIn = (group: RunGroup, ids: string[], asked: boolean[]) =>
      Promise.all(ids.map((id, i) => (asked[i] ? group.queue.getJobState(id) : 'unknown')));
    for await (const page of this.unfinished(tenantId)) {
      const ids = page.map((run) => run.id);
      const inLanes = await to.lanes.holds(ids);
      const notInLanes = inLanes.map((held) => !held);
      const [left, there] = await Promise.all([
        stateIn(from, ids, movingIn ? notInLanes : []),
        stateIn(to, ids, notInLanes),
      ]);
      if (left.some((state) => state === 'active' || WAITING.has(state))) return false;
      // A job failed in the queue is the reconciler's to end; one completed is a pass ending.
      const lost = page.filter((_, i) => notInLanes[i] && there[i] === 'unknown' && left[i] === 'unknown');
      if (lost.length === 0) continue;
      const { debounced } = await to.enqueue(lost.map(runJob), movingIn);
      await this.store.debounceRuns(debounced);
    }
    return true;
  }

  /** The tenant's unfinished runs, oldest first, a page at a time (however old: the store's clock is not ours). */
  private async *unfinished(tenantId: string): AsyncGenerator<UnfinishedRun[]> {
    for (let after: UnfinishedRun | undefined; ; ) {
      const page = await this.store.listUnfinishedRuns('infinity', after, PAGE, tenantId);
      if (page.length > 0) yield page;
      if (page.length < PAGE) return;
      after = page[page.length - 1];
    }
  }

  private async stored(tenantId: string): Promise<RunPlacement | undefined> {
    return (await this.store.listRunPlacements()).find((placement) => placement.tenantId === tenantId);
  }

  /** The tenant's move lock, if no other process holds it. */
  private async lock(tenantId: string) {
    const redis = await ioredisOf(this.queue.groups[0].queue.client);
    const key = `${this.queue.groups[0].slot}:tributary:move-lock:${tenantId}`;
    const token = newId();
    if ((await redis.set(key, token, 'PX', LOCK_MS, 'NX')) !== 'OK') return undefined;
    return {
      release: async () => {
        if ((await redis.get(key)) === token) await redis.del(key);
      },
    };
  }
}

const shown = ({ draining: _, ...placement }: RunPlacement): TenantPlacement => placement;
