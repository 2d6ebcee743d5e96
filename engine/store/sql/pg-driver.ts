import pg from 'pg';
import {
  assertIdentifier,
  PlanAging,
  type QueryOptions,
  refusedStatement,
  type SqlDriver,
  type SqlExecutor,
} from './driver.ts';

export interface PgDriverOptions {
  connectionString: string;
  /** Every connection works in this schema (one per test file, or one per deployment). */
  schema?: string;
  maxConnections?: number;
}

/** PostgreSQL through a `pg` pool: for separate API and worker processes. */
export class PgDriver implements SqlDriver {
  private readonly pool: pg.Pool;
  readonly schema?: string;

  constructor(options: PgDriverOptions) {
    const schema = options.schema ? assertIdentifier(options.schema) : undefined;
    this.schema = schema;
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      // No JIT: Tributary's statements are short, and a misestimate past jit_above_cost compiled one retention
      // statement for 1.4 s to run it in 42 ms.
      options: schema ? `-c jit=off -c search_path=${schema}` : '-c jit=off',
    });
    // An idle connection that drops is replaced by the pool; without a listener it would crash the process.
    this.pool.on('error', () => {});
  }

  /** Statements are prepared once per connection and then sent by name: no text to resend, no re-planning. */
  private readonly statementNames = new Map<string, string>();

  private prepared(text: string, values?: unknown[]): pg.QueryConfig {
    let name = this.statementNames.get(text);
    if (!name) this.statementNames.set(text, (name = `tributary_${this.statementNames.size}`));
    return { name, text, values };
  }

  /** When each connection's cached plans were made: they are dropped as PlanAging says. */
  private readonly plansMadeAt = new WeakMap<pg.PoolClient, number>();
  private readonly planAging = new PlanAging();

  private async connection(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    const madeAt = this.plansMadeAt.get(client);
    const now = Date.now();
    if (madeAt === undefined || this.planAging.stale(madeAt, now)) {
      try {
        if (madeAt !== undefined) await client.query('discard plans');
        this.plansMadeAt.set(client, now);
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
    }
    return client;
  }

  /** The connections whose plan_cache_mode is force_generic_plan (QueryOptions.plan): switched only when it differs. */
  private readonly genericPlans = new WeakSet<pg.PoolClient>();

  private async planFor(client: pg.PoolClient, options?: QueryOptions) {
    const generic = options?.plan === 'generic';
    if (generic === this.genericPlans.has(client)) return;
    await client.query(generic ? 'set plan_cache_mode = force_generic_plan' : 'reset plan_cache_mode');
    if (generic) this.genericPlans.add(client);
    else this.genericPlans.delete(client);
  }

  async query<Row>(text: string, params?: unknown[], options?: QueryOptions): Promise<Row[]> {
    const client = await this.connection();
    let result: pg.QueryResult;
    try {
      await this.planFor(client, options);
      result = await client.query(this.prepared(text, params));
    } catch (error) {
      // A statement PostgreSQL refused leaves the connection usable; any other failure discards it.
      client.release(error instanceof pg.DatabaseError ? undefined : (error as Error));
      throw refusedStatement(error, text);
    }
    client.release();
    return result.rows as Row[];
  }

  async exec(script: string) {
    await this.pool.query(script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: { closeAfter?: boolean }): Promise<T> {
    const client = await this.connection();
    try {
      // Planned for each call's values, as a transaction's writes want, whatever the connection's last read asked.
      await this.planFor(client);
      await client.query('begin');
      const result = await fn({
        // No generic plans here: a setting made in a transaction that rolls back is undone with it.
        query: async <Row>(text: string, params?: unknown[]) => {
          try {
            return (await client.query(this.prepared(text, params))).rows as Row[];
          } catch (error) {
            throw refusedStatement(error, text);
          }
        },
        exec: async (script: string) => void (await client.query(script)),
      });
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release(options?.closeAfter === true);
    }
  }

  async close() {
    await this.pool.end();
  }
}
