type Entry<Item, Result> = { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void };

export interface GroupCommitOptions<Item> {
  maxBatch: number;
  maxInFlight: number;
  /**
   * Items costly to write (a body of a megabyte): each is written alone, and they take turns with
   * groups of the others, so a small item never waits in a statement that carries a big one, nor
   * behind a queue of them.
   */
  heavy?: (item: Item) => boolean;
  /**
   * A group that fails is tried again one item at a time, so that one bad item fails alone (the default); false
   * fails every item of the group with its error, where a failure can only be the group's (a lost connection).
   */
  retryEachAlone?: boolean;
}

/**
 * Group commit: callers submit one item each; items that arrive while earlier flushes are in
 * flight are written together by the next flush. Idle, an item is flushed at once (no added
 * latency); under load, one round trip serves many requests.
 */
export class GroupCommit<Item, Result> {
  private readonly pending: Array<Entry<Item, Result>> = [];
  private readonly pendingHeavy: Array<Entry<Item, Result>> = [];
  private heavyNext = false;
  private inFlight = 0;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly options: GroupCommitOptions<Item>,
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      (this.options.heavy?.(item) ? this.pendingHeavy : this.pending).push({ item, resolve, reject });
      this.drain();
    });
  }

  private async flushEach(batch: Array<Entry<Item, Result>>) {
    for (const entry of batch) {
      await this.flush([entry.item]).then(([result]) => entry.resolve(result), entry.reject);
    }
  }

  /** The next batch: a heavy item alone or a group of the others, in turn when both wait. */
  private nextBatch(): Array<Entry<Item, Result>> {
    const heavy = this.pendingHeavy.length > 0 && (this.pending.length === 0 || this.heavyNext);
    this.heavyNext = !heavy;
    return heavy ? this.pendingHeavy.splice(0, 1) : this.pending.splice(0, this.options.maxBatch);
  }

  private drain() {
    while (this.inFlight < this.options.maxInFlight && this.pending.length + this.pendingHeavy.length > 0) {
      const batch = this.nextBatch();
      this.inFlight++;
      this.flush(batch.map((entry) => entry.item))
        .then(
          (results) => {
            for (const [index, entry] of batch.entries()) entry.resolve(results[index]);
          },
          // One bad item must not fail the others: retry each on its own, so each gets its own answer.
          (error) => {
            if (batch.length > 1 && this.options.retryEachAlone !== false) return this.flushEach(batch);
            for (const entry of batch) entry.reject(error);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }
}
