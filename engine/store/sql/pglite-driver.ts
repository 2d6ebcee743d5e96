import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  assertIdentifier,
  PlanAging,
  type QueryOptions,
  refusedStatement,
  type SqlDriver,
  type SqlExecutor,
} from './driver.ts';

type Lane = 'foreground' | 'background';

/** What the driver sends the database's thread (pglite-thread.js). */
export interface ThreadRequest {
  id: number;
  /** `begin` starts a transaction, its statements planned for their values (see QueryOptions.plan). */
  kind: 'query' | 'exec' | 'begin' | 'close';
  text?: string;
  params?: unknown[];
  /** QueryOptions.plan: planned once for any values. */
  generic?: boolean;
  /** The statement is one of a transaction's. */
  inTransaction?: boolean;
  /** The session's cached plans are dropped first (PlanAging): with a query out of a transaction, or a begin. */
  refreshPlans?: boolean;
}

/** A PostgreSQL error's code and names survive the crossing; its class, detail and the statement's values do not. */
export type ThreadReply = { id: number; rows?: unknown[]; error?: Record<string, unknown> & { message: string } };

export interface ThreadOptions {
  dataDir?: string;
  /** Already checked by assertIdentifier. */
  schema?: string;
}

/** After this many foreground turns in a row, a waiting statement of another kind goes next. */
const FOREGROUND_STREAK = 4;

/** What a statement waits in: its driver's lane, or `heavy` (QueryOptions.large) whatever its lane. */
type Queue = Lane | 'heavy';

/**
 * Embedded PostgreSQL (WASM) for the one-process mode. PGlite runs in a thread of its own
 * (pglite-thread.js): executing a statement there leaves this event loop free for HTTP, Redis and
 * runs, and uses a second core. It executes one statement at a time and takes no lock on its
 * directory (the caller must hold one). Statements are therefore scheduled here: requests waiting
 * on an answer (webhooks, API calls) go before background work (runs), so a flow URL answers in
 * time even while a backlog of runs is being worked off; background work still gets every few
 * turns. Heavy statements (large values: a body of a megabyte takes PGlite ~40 ms to store) wait
 * apart and share the thread's time equally with background work, so one tenant's large bodies hold
 * up neither the answers nor other tenants' runs.
 */
export class PgliteDriver implements SqlDriver {
  private busy = false;
  private streak = 0;
  /** How much more of the thread's time heavy statements have had than background ones, while both waited. */
  private heavyLeadMs = 0;
  private readonly waiting: Record<Queue, Array<() => void>> = { foreground: [], background: [], heavy: [] };
  // biome-ignore lint/suspicious/noExplicitAny: rows, typed by the caller of query
  private readonly replies = new Map<number, { resolve: (rows: any[]) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  /** Why the thread is gone, once it is: every statement after fails with it. */
  private failure?: Error;
  /** When the session's cached plans were made: they are dropped as PlanAging says. */
  private plansMadeAt = Date.now();
  private readonly planAging = new PlanAging();

  private constructor(
    private readonly thread: Worker,
    private readonly lane: Lane = 'foreground',
    private readonly owner?: PgliteDriver,
  ) {}

  /**
   * `dataDir` undefined keeps everything in memory. A new data directory is created by a process of
   * its own: creating one takes ~600 MB of WebAssembly memory, which a thread that ends does not all
   * give back to the system, and the running database needs a fifth of that.
   */
  static async open(dataDir?: string, schema?: string): Promise<PgliteDriver> {
    if (dataDir !== undefined && !existsSync(path.join(dataDir, 'PG_VERSION'))) await createDataDir(dataDir);
    return PgliteDriver.start({ dataDir, schema: schema === undefined ? undefined : assertIdentifier(schema) });
  }

  private static async start(options: ThreadOptions): Promise<PgliteDriver> {
    // Plain JavaScript: the thread does without tsx's loader, and the memory it takes.
    const thread = new Worker(new URL('./pglite-thread.js', import.meta.url), { workerData: options });
    const driver = new PgliteDriver(thread);
    thread.on('message', (reply: ThreadReply) => driver.settle(reply));
    thread.on('error', (error) => driver.failAll(error));
    thread.on('exit', (code) => driver.failAll(new Error(`the embedded database's thread exited (${code})`)));
    // The thread's first reply (id 0) says the database is open, or why it could not be.
    await new Promise((resolve, reject) => driver.replies.set(0, { resolve, reject })).catch(async (error: unknown) => {
      await thread.terminate();
      throw error;
    });
    return driver;
  }

  /** The same database, in the background lane: for the worker. Closing it closes nothing. */
  background(): SqlDriver {
    return new PgliteDriver(this.thread, 'background', this);
  }

  query<Row>(text: string, params?: unknown[], options?: QueryOptions): Promise<Row[]> {
    return this.exclusive(
      () => this.send('query', text, params, { generic: options?.plan === 'generic', refreshPlans: this.plansStale() }),
      options?.large ? 'heavy' : this.lane,
    );
  }

  exec(script: string): Promise<void> {
    return this.exclusive(async () => void (await this.send('exec', script)));
  }

  /** BEGIN, then `fn`'s statements, then COMMIT (or ROLLBACK if it throws), with no other statement between. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      await this.send('begin', undefined, undefined, { refreshPlans: this.plansStale() });
      try {
        const result = await fn({
          query: <Row>(text: string, params?: unknown[]) =>
            this.send('query', text, params, { inTransaction: true }) as Promise<Row[]>,
          exec: async (script: string) => void (await this.send('exec', script)),
        });
        await this.send('exec', 'commit');
        return result;
      } catch (error) {
        await this.send('exec', 'rollback');
        throw error;
      }
    });
  }

  async close() {
    if (this.owner) return;
    await this.exclusive(() => this.send('close'));
    await this.thread.terminate();
  }

  private send(
    kind: ThreadRequest['kind'],
    text?: string,
    params?: unknown[],
    options?: Pick<ThreadRequest, 'generic' | 'inTransaction' | 'refreshPlans'>,
    // biome-ignore lint/suspicious/noExplicitAny: rows, typed by the caller of query
  ): Promise<any[]> {
    const scheduler = this.owner ?? this;
    const id = scheduler.nextId++;
    if (scheduler.failure) return Promise.reject(scheduler.failure);
    return new Promise((resolve, reject) => {
      scheduler.replies.set(id, { resolve, reject: (error) => reject(refusedStatement(error, text ?? kind)) });
      this.thread.postMessage({ id, kind, text, params, ...options } satisfies ThreadRequest);
    });
  }

  /** Whether the session's cached plans are to be dropped with the statement sent now (then counted as made now). */
  private plansStale(): boolean {
    const scheduler = this.owner ?? this;
    const now = Date.now();
    if (!scheduler.planAging.stale(scheduler.plansMadeAt, now)) return false;
    scheduler.plansMadeAt = now;
    return true;
  }

  private settle(reply: ThreadReply) {
    const waiter = this.replies.get(reply.id);
    if (!waiter) return;
    this.replies.delete(reply.id);
    if (reply.error) waiter.reject(asError(reply.error));
    else waiter.resolve(reply.rows ?? []);
  }

  private failAll(error: Error) {
    this.failure ??= error;
    for (const waiter of this.replies.values()) waiter.reject(error);
    this.replies.clear();
  }

  private async exclusive<T>(work: () => Promise<T>, queue: Queue = this.lane): Promise<T> {
    const scheduler = this.owner ?? this;
    await scheduler.turn(queue);
    const startedAt = performance.now();
    try {
      return await work();
    } finally {
      scheduler.next(queue, performance.now() - startedAt);
    }
  }

  private turn(queue: Queue): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting[queue].push(resolve));
  }

  /** Hands the thread to the next statement, `finished` having held it for `tookMs`. */
  private next(finished: Queue, tookMs: number) {
    const { foreground, background, heavy } = this.waiting;
    if (heavy.length === 0 || background.length === 0) this.heavyLeadMs = 0;
    else if (finished !== 'foreground') this.heavyLeadMs += finished === 'heavy' ? tookMs : -tookMs;
    const others = background.length + heavy.length > 0;
    const queue: Queue =
      foreground.length > 0 && (!others || this.streak < FOREGROUND_STREAK)
        ? 'foreground'
        : heavy.length > 0 && (background.length === 0 || this.heavyLeadMs <= 0)
          ? 'heavy'
          : 'background';
    this.streak = queue === 'foreground' ? this.streak + 1 : 0;
    const resume = this.waiting[queue].shift();
    if (resume) resume();
    else this.busy = false;
  }
}

/** An error as the thread sent it: PostgreSQL's fields (code, detail, ...) on an Error. */
const asError = ({ message, ...fields }: ThreadReply['error'] & object) => Object.assign(new Error(message), fields);

/** Creates a PGlite database in `dataDir` in a child process, and waits for it to end. */
async function createDataDir(dataDir: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('./pglite-thread.js', import.meta.url)), '--create', dataDir],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  if (code !== 0) throw new Error(`the embedded database could not be created in ${dataDir}: ${output.trim()}`);
}
