import { Queue, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { environmentId, type FlowDocument, retryable, newId } from '../model/index.ts';
import { pages, type FlowStore, type MessageStore, type RunStore, type TenantStore } from '../store/index.ts';
import { repeatOptions } from '../triggers/index.ts';
import { acceptMessages, type QueueOptions, type RunQueue } from './run-queue.ts';
import { withinEnqueueTimeout, ticksSlot } from '../redis/index.ts';

export const TICK_QUEUE = 'ticks';

/** A tick names the flow and the version its schedule was registered for. */
export interface TickJobData {
  tenantId: string;
  flowId: string;
  flowVersion: number;
}

/** One job scheduler per flow: the key is the flow, so however many processes there are, one owns each schedule. */
const schedulerId = (tenantId: string, flowId: string) => `flow:${tenantId}:${flowId}`;

/**
 * The schedules of scheduled flows, kept in Redis as BullMQ job schedulers. After anything that
 * changes which version of a flow is active (publish, activate, deactivate, delete), `sync` makes
 * the flow's scheduler match it: registered, replaced (a new version), or removed; and the flow's
 * concurrency, which fair dispatch reads in Redis too.
 */
export class FlowSchedules {
  readonly queue: Queue<TickJobData>;

  constructor(
    private readonly store: FlowStore & TenantStore & RunStore,
    /** Where the active version's concurrency goes, for fair dispatch to read. */
    private readonly runs: Pick<RunQueue, 'flowSettings'>,
    options: QueueOptions,
  ) {
    this.queue = new Queue<TickJobData>(TICK_QUEUE, {
      connection: options.connection,
      prefix: ticksSlot(options.prefix),
    });
    this.queue.on('error', () => {});
  }

  async sync(tenantId: string, flowId: string): Promise<void> {
    try {
      await withinEnqueueTimeout(this.apply(tenantId, flowId), 'update the schedule');
    } catch (error) {
      throw retryable(
        `the flow's schedule could not be updated (${(error as Error).message}): activate the flow again`,
      );
    }
  }

  /**
   * Make every flow's scheduler match it (after Redis lost them): the published flows of every tenant, in each of its
   * environments, page by page. Returns how many flows were looked at.
   */
  async syncAll(): Promise<number> {
    let flows = 0;
    for await (const tenant of pages((after) => this.store.listTenants({}, { first: 100, after }))) {
      const environments = await this.store.listEnvironments(tenant.id);
      for (const id of [tenant.id, ...environments.map(({ name }) => environmentId(tenant.id, name))]) {
        const published = (after?: string) => this.store.listFlows(id, { published: true }, { first: 100, after });
        for await (const flow of pages(published)) {
          if (!flow.active) continue;
          await this.sync(id, flow.id);
          flows++;
        }
      }
    }
    return flows;
  }

  /** Remove every schedule of a tenant (it was deleted). */
  async removeTenant(tenantId: string): Promise<void> {
    const prefix = schedulerId(tenantId, '');
    const PAGE = 500;
    const ids: string[] = [];
    for (let start = 0; ; start += PAGE) {
      const schedulers = await this.queue.getJobSchedulers(start, start + PAGE - 1, true);
      ids.push(...schedulers.map((scheduler) => scheduler.key).filter((key) => key.startsWith(prefix)));
      if (schedulers.length < PAGE) break;
    }
    await Promise.all(ids.map((id) => this.queue.removeJobScheduler(id)));
  }

  /** Write the settings of a tenant's active flows where its runs go now (it moved to another slot group). */
  async placeFlows(tenantId: string): Promise<void> {
    const published = (after?: string) => this.store.listFlows(tenantId, { published: true }, { first: 100, after });
    for await (const flow of pages(published))
      if (flow.active) await this.writeFlowSettings(tenantId, flow.id, await this.activeVersion(tenantId, flow.id));
  }

  private async activeVersion(tenantId: string, flowId: string) {
    const flow = await this.store.getFlow(tenantId, flowId);
    return flow?.active && flow.activeVersion !== null
      ? await this.store.getFlowVersion(tenantId, flowId, flow.activeVersion)
      : undefined;
  }

  /** The active version's concurrency and priority, for fair dispatch to read (none: the defaults). */
  private writeFlowSettings(tenantId: string, flowId: string, version: { document: FlowDocument } | undefined) {
    return this.runs.flowSettings(tenantId, flowId, {
      concurrency: version?.document.concurrency,
      priority: version?.document.flowControl?.priority,
    });
  }

  private async apply(tenantId: string, flowId: string): Promise<void> {
    const version = await this.activeVersion(tenantId, flowId);
    await this.writeFlowSettings(tenantId, flowId, version);
    const trigger = version?.document.trigger;
    const id = schedulerId(tenantId, flowId);
    if (!version || trigger?.type !== 'schedule' || !trigger.config) {
      await this.queue.removeJobScheduler(id);
      return;
    }
    await this.queue.upsertJobScheduler(id, repeatOptions(trigger.config), {
      name: 'tick',
      data: { tenantId, flowId, flowVersion: version.version },
      opts: { removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 } },
    });
  }

  close() {
    return this.queue.close();
  }
}

/**
 * Turns each tick into a message and a run of the flow, through the same acceptance as a webhook.
 * A tick is dropped when its version is no longer the active one (a schedule never fires for an
 * old version), when the tenant is suspended, or when a run of the flow has not finished yet (polls
 * never overlap).
 */
export class TickWorker {
  readonly worker: Worker<TickJobData>;

  private readonly logger: Logger;

  constructor(
    private readonly store: FlowStore & TenantStore & RunStore & MessageStore,
    private readonly runs: RunQueue,
    private readonly schedules: FlowSchedules,
    options: QueueOptions & { logger: Logger },
  ) {
    this.logger = options.logger;
    this.worker = new Worker<TickJobData>(TICK_QUEUE, (job) => this.tick(job), {
      connection: options.connection,
      prefix: ticksSlot(options.prefix),
      concurrency: 1,
      autorun: false,
    });
    this.worker.on('error', (error) => this.logger.error({ err: error }, 'tick worker error'));
  }

  async start() {
    void this.worker.run();
    await this.worker.waitUntilReady();
  }

  private async tick(job: Job<TickJobData>): Promise<{ outcome: string; runId?: string }> {
    const { tenantId, flowId, flowVersion } = job.data;
    const flow = await this.store.getFlow(tenantId, flowId);
    if (!flow?.active || flow.activeVersion !== flowVersion) {
      // A leftover of a replaced or removed schedule: make the scheduler match the flow again.
      await this.schedules.sync(tenantId, flowId);
      return { outcome: 'stale' };
    }
    if ((await this.store.getTenant(tenantId))?.status !== 'active') {
      this.logger.info({ tenantId, flowId }, 'tick skipped: the tenant is suspended');
      return { outcome: 'suspended' };
    }
    if (await this.store.hasUnfinishedRun(tenantId, flowId)) {
      this.logger.info({ tenantId, flowId }, 'tick skipped: the previous run of the flow has not finished');
      return { outcome: 'overlap' };
    }
    const firedAt = new Date().toISOString();
    const scheduledAt = new Date(
      job.opts.delay !== undefined ? job.timestamp + job.opts.delay : job.timestamp,
    ).toISOString();
    const [accepted] = await acceptMessages(this.store, this.runs, [
      {
        // The tick's job id is unique per scheduled time: a tick handled twice starts one run.
        message: {
          tenantId,
          id: newId(),
          flowId,
          flowVersion,
          deliveryId: `tick:${job.id}`,
          topic: 'schedule',
          body: { scheduledAt, firedAt },
          headers: {},
          query: {},
        },
        runId: newId(),
      },
    ]);
    // Deactivated or replaced since it was read above.
    if (!accepted) return { outcome: 'stale' };
    return { outcome: accepted.duplicate ? 'duplicate' : 'started', runId: accepted.run.id };
  }

  close() {
    return this.worker.close();
  }
}
