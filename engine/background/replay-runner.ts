import type { Logger } from 'pino';
import { MAX_REPLAY_RATE, newId } from '../model/index.ts';
import type { ReplayStore } from '../store/index.ts';
import { runJob, type RunQueue } from '../queue/index.ts';
import { SingleFlight } from '../redis/index.ts';

/** How often a worker looks for due replays; each is due once a second at most (its rate is per second). */
const LOOK_EVERY_MS = 1000;
/** Replay pages taken in one look, across tenants, so that one look stays short. */
const PAGES_PER_LOOK = 20;

/**
 * Works off bulk replays in every worker process: each look takes the due replays a page at a time (the store
 * locks a replay while its page is made, so workers share them without doubles) and queues the runs made.
 * A run recorded but not queued (a crash in between) is queued by the reconciler, as any other.
 */
export class ReplayRunner {
  private timer?: NodeJS.Timeout;
  private readonly rounds = new SingleFlight(
    () => this.takePages(),
    (error) => {
      this.logger.warn({ err: error }, 'could not go on with bulk replays');
      return 0;
    },
  );

  constructor(
    private readonly store: ReplayStore,
    private readonly queue: RunQueue,
    private readonly logger: Logger,
  ) {}

  start() {
    this.timer = setInterval(() => void this.look(), LOOK_EVERY_MS).unref();
  }

  /** Stops the looks, after the one under way. */
  async close() {
    clearInterval(this.timer);
    await this.rounds.settled();
  }

  /** One look: pages of due replays until none is due (or PAGES_PER_LOOK); how many runs it queued. */
  look(): Promise<number> {
    return this.rounds.run();
  }

  private async takePages(): Promise<number> {
    let queued = 0;
    for (let pages = 0; pages < PAGES_PER_LOOK; pages++) {
      const page = await this.store.replayNextPage(Array.from({ length: MAX_REPLAY_RATE }, newId));
      if (!page) break;
      const { priority } = page.replay;
      await this.queue.enqueue(page.runs.map((run) => ({ ...runJob(run), priority })));
      queued += page.runs.length;
      if (page.replay.status !== 'running')
        this.logger.info(
          { replayId: page.replay.id, replayed: page.replay.replayed, skipped: page.replay.skipped },
          'bulk replay finished',
        );
    }
    return queued;
  }
}
