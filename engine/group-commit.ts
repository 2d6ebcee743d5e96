/**
 * Group commit: callers submit one item each; items that arrive while earlier flushes are in
 * flight are written together by the next flush. Idle, an item is flushed at once (no added
 * latency); under load, one round trip serves many requests.
 */
export class GroupCommit<Item, Result> {
  private readonly pending: Array<{ item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }> =
    [];
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

  private async flushEach(batch: typeof this.pending) {
    for (const entry of batch) {
      await this.flush([entry.item]).then(([result]) => entry.resolve(result), entry.reject);
    }
  }

  private drain() {
    while (this.inFlight < this.options.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.options.maxBatch);
      this.inFlight++;
      this.flush(batch.map((entry) => entry.item))
        .then(
          (results) => {
            for (const [index, entry] of batch.entries()) entry.resolve(results[index]);
          },
          // One bad item must not fail the others: retry each on its own, so each gets its own answer.
          (error) => (batch.length === 1 ? batch[0].reject(error) : this.flushEach(batch)),
        )
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }
}
