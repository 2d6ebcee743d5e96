/**
 * Group commit: callers submit one item each; items that arrive while earlier flushes are in
 * flight are written together by the next flush. Idle, an item is flushed at once (no added
 * latency); under load, one round trip serves many requests.
 */
export class GroupCommit<Item, Result> {
  private readonly pending: Array<{ item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }> = [];
  private inFlight = 0;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly options: { maxBatch: number; maxInFlight: number },
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.drain();
    });
  }

  private drain() {
    while (this.inFlight < this.options.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.options.maxBatch);
      this.inFlight++;
      this.flush(batch.map((entry) => entry.item)).then(
        (results) => batch.forEach((entry, index) => entry.resolve(results[index])),
        (error) => batch.forEach((entry) => entry.reject(error)),
      ).finally(() => {
        this.inFlight--;
        this.drain();
      });
    }
  }
}
