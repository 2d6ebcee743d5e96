import { PGlite } from '@electric-sql/pglite';
import { assertIdentifier, type SqlDriver, type SqlExecutor } from './driver.ts';

type Lane = 'foreground' | 'background';

/** After this many foreground turns in a row, a waiting background statement goes next. */
const FOREGROUND_STREAK = 4;

/**
 * Embedded PostgreSQL (WASM) for the one-process mode. It executes one statement at a time, on the
 * event loop it shares with the API and the worker, and takes no lock on its directory (the
 * caller must hold one). Statements are therefore scheduled here, in two lanes: requests waiting
 * on an answer (webhooks, API calls) go before background work (runs), so a flow URL answers in
 * time even while a backlog of runs is being worked off; background work still gets every few turns.
 */
export class PgliteDriver implements SqlDriver {
  private busy = false;
  private streak = 0;
  private readonly waiting: Record<Lane, Array<() => void>> = { foreground: [], background: [] };

  private constructor(private readonly db: PGlite, private readonly lane: Lane = 'foreground', private readonly owner?: PgliteDriver) {}

  /** `dataDir` undefined keeps everything in memory. */
  static async open(dataDir?: string, schema?: string): Promise<PgliteDriver> {
    const db = await PGlite.create(dataDir);
    if (schema) {
      const name = assertIdentifier(schema);
      await db.exec(`create schema if not exists ${name}; set search_path to ${name}`);
    }
    return new PgliteDriver(db);
  }

  /** The same database, in the background lane: for the worker. Closing it closes nothing. */
  background(): SqlDriver {
    return new PgliteDriver(this.db, 'background', this);
  }

  query<Row>(text: string, params?: unknown[]): Promise<Row[]> {
    return this.exclusive(async () => (await this.db.query<Row>(text, params)).rows);
  }

  exec(script: string): Promise<void> {
    return this.exclusive(async () => void (await this.db.exec(script)));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.exclusive(() =>
      this.db.transaction((tx) => fn({
        query: async <Row>(text: string, params?: unknown[]) => (await tx.query<Row>(text, params)).rows,
        exec: async (script: string) => void (await tx.exec(script)),
      })),
    );
  }

  async close() {
    if (!this.owner) await this.db.close();
  }

  private async exclusive<T>(work: () => Promise<T>): Promise<T> {
    const scheduler = this.owner ?? this;
    await scheduler.turn(this.lane);
    try {
      return await work();
    } finally {
      scheduler.next();
    }
  }

  private turn(lane: Lane): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting[lane].push(resolve));
  }

  private next() {
    const { foreground, background } = this.waiting;
    const backgroundsTurn = background.length > 0 && (foreground.length === 0 || this.streak >= FOREGROUND_STREAK);
    const resume = backgroundsTurn ? background.shift() : foreground.shift();
    this.streak = backgroundsTurn ? 0 : this.streak + 1;
    if (resume) resume();
    else this.busy = false;
  }
}
