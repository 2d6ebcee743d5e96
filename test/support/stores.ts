import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Store } from '../../engine/store/port.ts';
import { PgDriver } from '../../engine/store/sql/pg-driver.ts';
import { PgliteDriver } from '../../engine/store/sql/pglite-driver.ts';
import { SqlStore } from '../../engine/store/sql/sql-store.ts';
import { POSTGRES_URL } from './harness.ts';

export type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

/** The store on each adapter, for `describe.each`: PGlite in memory, and PostgreSQL in a schema of its own. */
export function storeAdapters(schemaPrefix: string): Array<[string, OpenStore]> {
  return [
    [
      'PGlite',
      async () => {
        const store = await SqlStore.open(await PgliteDriver.open());
        return { store, cleanup: () => store.close() };
      },
    ],
    [
      'PostgreSQL',
      async () => {
        const schema = `${schemaPrefix}_${randomBytes(5).toString('hex')}`;
        const admin = new pg.Client({ connectionString: POSTGRES_URL });
        await admin.connect();
        await admin.query(`create schema ${schema}`);
        const store = await SqlStore.open(new PgDriver({ connectionString: POSTGRES_URL, schema }));
        return {
          store,
          cleanup: async () => {
            await store.close();
            await admin.query(`drop schema ${schema} cascade`);
            await admin.end();
          },
        };
      },
    ],
  ];
}
