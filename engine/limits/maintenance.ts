import type { Queue } from 'bullmq';
import { ioredisOf, withinEnqueueTimeout } from '../redis/index.ts';

export interface Maintenance {
  reason: string;
  since: string;
  /** What refused deliveries tell senders (Retry-After). */
  retryAfterSeconds: number;
}

/**
 * Maintenance mode, for every process at once: a flag in Redis that the intake reads (refusing
 * deliveries with 503 and Retry-After, so senders retry later and nothing is half-accepted), and
 * the queues paused, so workers finish the jobs they hold and take no new one — a graceful drain.
 */
export class MaintenanceMode {
  private known: Maintenance | null = null;
  private checkedAt = 0;
  private refreshing?: Promise<void>;

  /** `queues[0]`'s connection and prefix hold the flag. */
  constructor(
    private readonly queues: Queue[],
    private readonly cacheTtlMs: number,
  ) {}

  /** Named by BullMQ, beside the first queue's own keys (in its hash slot on a cluster). */
  private get key() {
    return this.queues[0].toKey('maintenance');
  }

  async current(): Promise<Maintenance | null> {
    const raw = await (await ioredisOf(this.queues[0].client)).get(this.key);
    return raw ? (JSON.parse(raw) as Maintenance) : null;
  }

  /**
   * The flag as last read, without waiting: what the intake checks on every delivery. A read older
   * than `cacheTtlMs` starts a new one in the background. While Redis does not answer, the last
   * value stands (and the enqueue that follows fails on its own, with a 503).
   */
  cached(): Maintenance | null {
    if (Date.now() - this.checkedAt > this.cacheTtlMs) void this.refresh();
    return this.known;
  }

  /** Read the flag now (once at a time, bounded by the enqueue timeout). */
  refresh(): Promise<void> {
    this.refreshing ??= withinEnqueueTimeout(this.current(), 'read the maintenance flag')
      .then(
        (value) => {
          this.known = value;
          this.checkedAt = Date.now();
        },
        () => {},
      )
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  async enable(request: { reason: string; retryAfterSeconds: number }): Promise<Maintenance> {
    const maintenance = { ...request, since: (await this.current())?.since ?? new Date().toISOString() };
    await (await ioredisOf(this.queues[0].client)).set(this.key, JSON.stringify(maintenance));
    await Promise.all(this.queues.map((queue) => queue.pause()));
    this.known = maintenance;
    return maintenance;
  }

  async disable(): Promise<void> {
    await (await ioredisOf(this.queues[0].client)).del(this.key);
    await Promise.all(this.queues.map((queue) => queue.resume()));
    this.known = null;
  }
}
