import { PGlite } from '@electric-sql/pglite';
import { assertIdentifier, type SqlDriver, type SqlExecutor } from './driver.ts';

/**
 * Embedded PostgreSQL (WASM) for the one-process mode. It serves one connection and one
 * transaction at a time, and takes no lock on its directory: the caller must hold one.
 */
export class PgliteDriver implements SqlDriver {
  private constructor(private readonly db: PGlite) {}

  /** `dataDir` undefined keeps everything in memory. */
  static async open(dataDir?: string, schema?: string): Promise<PgliteDriver> {
    const db = await PGlite.create(dataDir);
    if (schema) {
      const name = assertIdentifier(schema);
      await db.exec(`create schema if not exists ${name}; set search_path to ${name}`);
    }
    return new PgliteDriver(db);
  }

  async query<Row>(text: string, params?: unknown[]): Promise<Row[]> {
    return (await this.db.query<Row>(text, params)).rows;
  }

  async exec(script: string) {
    await this.db.exec(script);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) => fn({
      query: async <Row>(text: string, params?: unknown[]) => (await tx.query<Row>(text, params)).rows,
      exec: async (script: string) => void (await tx.exec(script)),
    }));
  }

  async close() {
    await this.db.close();
  }
}
