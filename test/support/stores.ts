import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Store } from '../../engine/store/port.ts';
import { PgDriver } from '../../engine/store/sql/pg-driver.ts';
import { PgliteDriver } from '../../engine/store/sql/pglite-driver.ts';
import { SqlStore } from '../../engine/store/sql/sql-store.ts';
import { migrate } from '../../engine/store/sql/migrations.ts';
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

/**
 * A PostgreSQL schema of its own migrated up to `version` (an upgrade rehearsed: rows written as that version
 * would, then the store opened), its driver, and its removal once the store on it is closed.
 */
export async function schemaAtVersion(prefix: string, version: number) {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const driver = new PgDriver({ connectionString: POSTGRES_URL, schema });
  await migrate(driver, version);
  return {
    driver,
    drop: async () => {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`drop schema ${schema} cascade`);
      await admin.end();
    },
  };
}
