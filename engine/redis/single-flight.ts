/**
 * `work`, at most one round at a time: asked while a round runs, it answers that round, so a timer that fires
 * again before the last round ended does not start a second. A failure is logged by `recover`, whose value
 * answers instead.
 */
export class SingleFlight<T> {
  private round?: Promise<T>;

  constructor(
    private readonly work: () => Promise<T>,
    private readonly recover: (error: unknown) => T,
  ) {}

  run(): Promise<T> {
    this.round ??= this.work()
      .catch(this.recover)
      .finally(() => (this.round = undefined));
    return this.round;
  }

  /** Waits for the round under way, if any (without starting one). */
  async settled(): Promise<void> {
    await this.round;
  }
}
