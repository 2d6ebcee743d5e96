import { type ConnectionOptions, type JobState, Queue } from 'bullmq';
import type { AcceptedMessage, MessageStore, NewMessage, Run, RunPlacement, RunStore } from '../store/index.ts';
import { heartbeatKey, workerSlotsKey } from './heartbeats.ts';
import { ioredisOf, runGroupOf, runsSlot, withinEnqueueTimeout } from '../redis/index.ts';
import { type DebouncedRun, RunLanes } from './run-lanes.ts';

export const RUN_QUEUE = 'runs';

/**
 * A job names its run and the flow version it is pinned to, nothing else: bodies live in the
 * store, secrets never leave it. The version lets a worker prepare the run before reading it.
 */
export interface RunJobData {
  tenantId: string;
  runId: string;
  flowId: string;
  flowVersion: number;
  /** How often the run was deferred, back while its tenant held every unreserved slot (at most MAX_DEFERRALS). */
  deferrals?: number;
  /** The run's concurrency key as the lanes know it (its scope in it), and how many runs of the key may run at once. */
  concurrency?: { key: string; limit: number };
  /** The run's debounce key as the lanes know it (its flow's), and how long it waits for a later run of the key. */
  debounce?: { key: string; periodMs: number; maxWaitMs: number };
  /** The run's own priority (a bulk replay's), 1 (first) to 5; its flow's when absent. */
  priority?: number;
}

export const runJob = (
  run: Pick<Run, 'tenantId' | 'id' | 'flowId' | 'flowVersion'> &
    Partial<Pick<Run, 'concurrency' | 'debounce'>> & { priority?: number | null },
): RunJobData => {
  const { tenantId, flowId, concurrency, debounce, priority } = run;
  const job: RunJobData = { tenantId, runId: run.id, flowId, flowVersion: run.flowVersion };
  // Keys are scoped (tenant ids have no colon): a tenant-wide one is shared by the tenant's flows, a flow's by its runs.
  if (concurrency) {
    const scope = concurrency.scope === 'tenant' ? 't' : `f:${flowId}`;
    job.concurrency = { key: `${tenantId}:${scope}:${concurrency.key}`, limit: concurrency.limit };
  }
  if (debounce) job.debounce = { ...debounce, key: `${tenantId}:${flowId}:${debounce.key}` };
  if (priority) job.priority = priority;
  return job;
};

export interface QueueOptions {
  connection: ConnectionOptions;
  /** Redis key prefix: one per deployment (or per test file); the keys add their slots' hash tags (key-slots.ts). */
  prefix: string;
}

export interface RunQueueOptions extends QueueOptions {
  /** Runs of one tenant executing at once, unless the tenant has a limit of its own; 0 for none. */
  tenantConcurrency: number;
  /** Percent of the live slots kept for tenants running few runs, free while another tenant floods. */
  reservedSlotsPercent: number;
  /** How long a dispatched run counts against its limits without a worker renewing its lease. */
  leaseMs: number;
  /** Slot groups of the run path (RUN_GROUPS): each its own queue and lanes, on its own master of a cluster. */
  groups?: number;
  /** Tenants an operator placed in a group of their choice (RUN_GROUP_TENANTS); the others go by their hash. */
  placed?: Readonly<Record<string, number>>;
  /** The tenants operators moved while they ran (TenantMoves), as the store keeps them: they win over `placed`. */
  moved?: () => Promise<Array<Pick<RunPlacement, 'tenantId' | 'group' | 'movingFrom' | 'draining'>>>;
}

/** Where a run is: in a group's lanes, or its job in a state in the group's queue. */
export interface RunLocation {
  group: RunGroup;
  state: 'lane' | JobState;
}

/** The run queue's name in a group: `runs` in the first, as before groups. */
export const runQueueName = (group: number) => (group === 0 ? RUN_QUEUE : `${RUN_QUEUE}-${group}`);

/** Whether a queue is a group's run queue. */
export const isRunQueue = (name: string) => name === RUN_QUEUE || name.startsWith(`${RUN_QUEUE}-`);

/**
 * Job attempts cover faults outside the flow (the store or Redis unreachable, a crash while
 * recording). Node-level retries are counted in the run's checkpoints and never spend these.
 */
const JOB_ATTEMPTS = 10;

/** A run to wake that is still ending its pass is looked at again this often, this many times. */
const WAKE_RETRY_MS = 20;
const WAKE_TRIES = 50;

/** How often a process reads where the operators' moves put tenants (RunQueue.refreshPlacements). */
const PLACEMENTS_REFRESH_MS = 1000;

/** A hand-off is confirmed within this long even when nothing else calls the lanes. */
const CONFIRM_WITHIN_MS = 100;

/**
 * One slot group of the run path: a BullMQ run queue and the fair lanes (one per tenant and flow, `RunLanes`) its
 * runs wait in, all in one hash slot. Runs enter the queue only as workers free slots, tenants served in turn: one
 * tenant's backlog never sits between another tenant's run and a worker. Every process dispatches: intake when it
 * queues runs, workers when runs end and on a timer.
 */
export class RunGroup {
  readonly queue: Queue<RunJobData>;
  readonly lanes: RunLanes;
  /** Runs whose pass ended, to release with the next dispatch, and until when a waiting one keeps its key. */
  private endedRuns: Array<RunJobData & { heldUntil: number }> = [];
  private dispatching?: Promise<void>;
  private dispatchAgain = false;
  private confirmTimer?: NodeJS.Timeout;

  /** The hash tag of its keys (key-slots.ts). */
  readonly slot: string;

  constructor(
    readonly index: number,
    options: RunQueueOptions,
  ) {
    this.slot = runsSlot(options.prefix, index, options.groups);
    this.queue = new Queue<RunJobData>(runQueueName(index), {
      connection: options.connection,
      prefix: this.slot,
      defaultJobOptions: {
        attempts: JOB_ATTEMPTS,
        backoff: { type: 'exponential', delay: 2000 },
        removeOnComplete: { age: 24 * 3600, count: 10_000 },
        removeOnFail: { age: 14 * 24 * 3600 },
      },
    });
    // Errors surface on the calls that fail; an unhandled 'error' event would end the process.
    this.queue.on('error', () => {});
    this.lanes = new RunLanes(() => ioredisOf(this.queue.client), {
      queue: this.queue,
      workersKey: heartbeatKey(this.queue),
      workerSlotsKey: workerSlotsKey(this.queue),
      leaseMs: options.leaseMs,
      tenantConcurrency: options.tenantConcurrency,
      reservedSlotsPercent: options.reservedSlotsPercent,
    });
  }

  /**
   * Queue runs in the lanes; those there is room for go to the workers at once (RunQueue.enqueue). Returns the runs
   * their debounce keys' later runs replaced, and those refused because their tenant is moving (RunLanes.push).
   */
  async enqueue(jobs: RunJobData[], movingIn = false): Promise<{ debounced: DebouncedRun[]; refused: string[] }> {
    const { now, debounced, refused } = await withinEnqueueTimeout(this.lanes.push(jobs, movingIn), 'take the runs');
    // Not awaited: accepted runs are safe in their lanes, and a failed hand-off is handed out again.
    void this.handOff(now).catch(() => {});
    return { debounced, refused };
  }

  /** A tenant's move into this group is over (TenantMoves): its runs there is room for go to the workers. */
  async settle(tenantId: string): Promise<void> {
    await this.handOff(await this.lanes.settle(tenantId));
  }

  /**
   * A run's pass ended (whatever its outcome): its leases go with the next dispatch, which it triggers. A run that
   * waits keeps its concurrency key until `heldUntil` (when it wakes, in ms since the epoch; 0: it ended for good).
   */
  ended(job: RunJobData, heldUntil: number) {
    this.endedRuns.push({ ...job, heldUntil });
    void this.dispatch();
  }

  /**
   * Move the runs there is room for from the lanes into the queue. One dispatch at a time per
   * process; calls meanwhile are served by one more after it.
   */
  dispatch(): Promise<void> {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return this.dispatching;
    }
    this.dispatching = (async () => {
      do {
        this.dispatchAgain = false;
        const ended = this.endedRuns.splice(0, 500);
        const runs = ended.length > 0 ? await this.lanes.release(ended) : await this.lanes.dispatch();
        await this.handOff(runs);
        if (this.endedRuns.length > 0) this.dispatchAgain = true;
      } while (this.dispatchAgain);
    })()
      .catch(() => {
        // Redis did not answer: the timer's next dispatch tries again; leases left behind expire.
      })
      .finally(() => (this.dispatching = undefined));
    return this.dispatching;
  }

  /**
   * Add the jobs, then confirm the hand-off with the next call to the lanes (unconfirmed, they are
   * handed out again); when no call comes soon, a dispatch carries it.
   */
  private async handOff(runs: RunJobData[]) {
    if (runs.length === 0) return;
    await this.queue.addBulk(runs.map((data) => ({ name: 'run', data, opts: { jobId: data.runId } })));
    this.lanes.confirm(runs.map((run) => run.runId));
    this.confirmTimer ??= setTimeout(() => {
      this.confirmTimer = undefined;
      if (this.lanes.unconfirmed) void this.dispatch();
    }, CONFIRM_WITHIN_MS).unref();
  }

  close() {
    clearTimeout(this.confirmTimer);
    return this.queue.close();
  }
}

/**
 * The run path: runs wait in the slot group of their tenant (`RunGroup`) and go to the workers, who serve every
 * group. One group (the default) is one queue; more spread the run traffic over a Redis Cluster's masters, a
 * tenant's runs staying in one group so that its fair share and limits hold there as before.
 */
export class RunQueue {
  readonly groups: RunGroup[];
  private readonly placed: Readonly<Record<string, number>>;
  /** Tenants moved by an operator (TenantMoves), as this process last read them: they win over `placed`. */
  private moved: Readonly<Record<string, number>> = {};
  private readonly readMoved?: RunQueueOptions['moved'];
  private readonly placementsTimer?: NodeJS.Timeout;

  constructor(options: RunQueueOptions) {
    this.groups = Array.from({ length: options.groups ?? 1 }, (_, index) => new RunGroup(index, options));
    this.placed = options.placed ?? {};
    this.readMoved = options.moved;
    // A process that has not seen a move yet sends the tenant's runs to the group it left, which refuses them: the
    // refusal makes it look at once (enqueue). Looking on a timer only spares that detour.
    if (this.groups.length > 1 && options.moved)
      this.placementsTimer = setInterval(
        () => void this.refreshPlacements().catch(() => {}),
        PLACEMENTS_REFRESH_MS,
      ).unref();
  }

  /** Every group's BullMQ queue. */
  get queues(): Queue<RunJobData>[] {
    return this.groups.map((group) => group.queue);
  }

  /** The group a tenant's new runs go to. */
  groupOf(tenantId: string): RunGroup {
    const moved = this.moved[tenantId];
    if (moved !== undefined && moved < this.groups.length) return this.groups[moved];
    return this.groups[runGroupOf(tenantId, this.groups.length, this.placed)];
  }

  /**
   * Read again where the operators' moves put tenants. A moving tenant's runs go on to the group it leaves until the
   * move has marked it in both (that group serves it until then), to the group it goes to from then on: both refuse
   * them until the move ends (enqueue), and its limits are written there.
   */
  async refreshPlacements(): Promise<void> {
    if (this.groups.length === 1 || !this.readMoved) return;
    const placements = await this.readMoved();
    this.moved = Object.fromEntries(
      placements.map((p) => [p.tenantId, p.movingFrom !== null && !p.draining ? p.movingFrom : p.group]),
    );
  }

  /**
   * Takes a waiting run up now instead of at the end of its delay (a caller whose called run ended, a run whose
   * turn on a budget came). A run not delayed (running, or already taken up) is left as it is; `whenDelayed` waits
   * a moment for a running one that is about to wait (it asked for its turn in the pass ending now).
   */
  async wake(tenantId: string, runId: string, options: { whenDelayed?: boolean } = {}): Promise<void> {
    for (let tries = 1; ; tries++) {
      const job = await this.findJob(tenantId, runId);
      const state = await job?.getState();
      if (state === 'delayed') return job!.promote().catch(() => {});
      if (!options.whenDelayed || state !== 'active' || tries === WAKE_TRIES) return;
      await new Promise((resolve) => setTimeout(resolve, WAKE_RETRY_MS));
    }
  }

  /** A run's job in its tenant's group, else in another (its tenant moved since the job was added). */
  private async findJob(tenantId: string, runId: string) {
    const own = this.groupOf(tenantId);
    const job = await own.queue.getJob(runId);
    if (job) return job;
    for (const group of this.groups) {
      const found = group === own ? undefined : await group.queue.getJob(runId);
      if (found) return found;
    }
    return undefined;
  }

  /**
   * Queue runs in their lanes: once this resolves they are accepted (a run already queued is not
   * queued twice). Those there is room for go to the workers at once. Returns the runs (these or earlier ones) a
   * later run of their debounce key took the place of: the caller ends them (enqueueRuns).
   *
   * A run whose tenant is moving between groups is refused there; it is in the store already (every run is stored
   * before it is queued), and the move queues it where the tenant goes (TenantMoves). One refused by a group its
   * tenant has left goes once more where the tenant is now.
   */
  async enqueue(jobs: RunJobData[]): Promise<DebouncedRun[]> {
    if (jobs.length === 0) return [];
    if (this.groups.length === 1) return (await this.groups[0].enqueue(jobs)).debounced;
    const sentTo = jobs.map((job) => this.groupOf(job.tenantId));
    const first = await this.pushTo(jobs, sentTo);
    if (first.refused.length === 0) return first.debounced;
    const refused = new Set(first.refused);
    await this.refreshPlacements();
    const again = jobs.filter((job, index) => refused.has(job.runId) && this.groupOf(job.tenantId) !== sentTo[index]);
    const second = await this.pushTo(
      again,
      again.map((job) => this.groupOf(job.tenantId)),
    );
    return [...first.debounced, ...second.debounced];
  }

  /** Push each job to its group (`groups`, index for index), a call per group. */
  private async pushTo(
    jobs: RunJobData[],
    groups: RunGroup[],
  ): Promise<{ debounced: DebouncedRun[]; refused: string[] }> {
    const byGroup = new Map<RunGroup, RunJobData[]>();
    for (const [index, job] of jobs.entries()) {
      const group = groups[index];
      const batch = byGroup.get(group);
      if (batch) batch.push(job);
      else byGroup.set(group, [job]);
    }
    const answers = await Promise.all([...byGroup].map(([group, batch]) => group.enqueue(batch)));
    return {
      debounced: answers.flatMap((answer) => answer.debounced),
      refused: answers.flatMap((answer) => answer.refused),
    };
  }

  /** Move the runs there is room for from every group's lanes into its queue. */
  async dispatch(): Promise<void> {
    await Promise.all(this.groups.map((group) => group.dispatch()));
  }

  /** A tenant's own weight and concurrency (RunLanes.share), in its group. */
  share(tenantId: string, share: { weight?: number; concurrency?: number }): Promise<void> {
    return this.groupOf(tenantId).lanes.share(tenantId, share);
  }

  /** A flow's concurrency and priority (RunLanes.flowSettings), in its tenant's group. */
  flowSettings(tenantId: string, flowId: string, settings: { concurrency?: number; priority?: number }) {
    return this.groupOf(tenantId).lanes.flowSettings(tenantId, flowId, settings);
  }

  /** Runs waiting in lanes, by tenant, over every group. */
  async backlog(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const backlog of await Promise.all(this.groups.map((group) => group.lanes.backlog())))
      for (const [tenant, runs] of Object.entries(backlog)) counts[tenant] = (counts[tenant] ?? 0) + runs;
    return counts;
  }

  /** Runs waiting for a concurrency key or a debounce period, by tenant and kind, over every group. */
  async keyedWaiting(): Promise<Array<{ tenantId: string; kind: 'concurrency_key' | 'debounce'; runs: number }>> {
    return (await Promise.all(this.groups.map((group) => group.lanes.keyedWaiting()))).flat();
  }

  /**
   * Where each run is: waiting in a group's lanes, or its job in a group's queue (and its state there); undefined
   * when nowhere. Its tenant's group is looked in first, then the others: a tenant an operator moved
   * (RUN_GROUP_TENANTS) leaves its earlier runs in the group it had.
   */
  async locate(runs: Array<{ id: string; tenantId: string }>): Promise<Array<RunLocation | undefined>> {
    const found: Array<RunLocation | undefined> = runs.map(() => undefined);
    const own = runs.map((run) => this.groupOf(run.tenantId));
    await Promise.all(this.groups.map((group) => this.lookIn(group, runs, found, (index) => own[index] === group)));
    if (this.groups.length > 1)
      for (const group of this.groups) await this.lookIn(group, runs, found, (index) => own[index] !== group);
    return found;
  }

  /** Looks for the runs not found yet that `looked` picks in one group's lanes and queue. */
  private async lookIn(
    group: RunGroup,
    runs: Array<{ id: string }>,
    found: Array<RunLocation | undefined>,
    looked: (index: number) => boolean,
  ) {
    const pending = runs.flatMap((_, index) => (!found[index] && looked(index) ? [index] : []));
    if (pending.length === 0) return;
    const inLanes = await group.lanes.holds(pending.map((index) => runs[index].id));
    for (const [at, index] of pending.entries()) {
      const state = inLanes[at] ? 'lane' : await group.queue.getJobState(runs[index].id);
      if (state !== 'unknown') found[index] = { group, state };
    }
  }

  close() {
    clearInterval(this.placementsTimer);
    return Promise.all(this.groups.map((group) => group.close()));
  }
}

/**
 * Queue runs; those a later run of their debounce key replaced end `debounced` in the store. One the store missed
 * (it failed) stays queued there: the reconciler queues it again, and it is debounced again.
 */
export async function enqueueRuns(store: Pick<RunStore, 'debounceRuns'>, queue: RunQueue, jobs: RunJobData[]) {
  const debounced = await queue.enqueue(jobs);
  await store.debounceRuns(debounced);
}

/** Store a batch of messages with their runs, then enqueue the runs; only then is any of them accepted. */
export async function acceptMessages(
  store: MessageStore & Pick<RunStore, 'debounceRuns'>,
  queue: RunQueue,
  batch: Array<{ message: NewMessage; runId: string }>,
): Promise<Array<AcceptedMessage | undefined>> {
  const results = await store.acceptMessages(batch);
  // New runs are queued unless held (they get a job when released). A duplicate whose run is still
  // queued never reached the queue (its first answer was a 503): it is enqueued now.
  const jobs: RunJobData[] = [];
  for (const result of results) if (result?.run.status === 'queued') jobs.push(runJob(result.run));
  await enqueueRuns(store, queue, jobs);
  return results;
}
