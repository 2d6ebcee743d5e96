import pg from 'pg';
import { assertIdentifier, type SqlDriver, type SqlExecutor } from './driver.ts';

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
      options: schema ? `-c search_path=${schema}` : undefined,
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

  async query<Row>(text: string, params?: unknown[]): Promise<Row[]> {
    return (await this.pool.query(this.prepared(text, params))).rows as Row[];
  }

  async exec(script: string) {
    await this.pool.query(script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const result = await fn({
        query: async <Row>(text: string, params?: unknown[]) => (await client.query(this.prepared(text, params))).rows as Row[],
        exec: async (script: string) => void (await client.query(script)),
      });
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async close() {
    await this.pool.end();
  }
}
