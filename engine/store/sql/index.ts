/**
 * The store's SQL adapter: the store on PostgreSQL or PGlite, its migrations, and the retention sweep's horizon.
 * Only bin/ opens it; the rest of the code speaks the port.
 */
export { PARTITIONS_AHEAD_MS } from './aggregates/retention.ts';
export type { QueryOptions, SqlDriver, SqlExecutor } from './driver.ts';
export { migrate, migrations } from './migrations.ts';
export { PgliteDriver } from './pglite-driver.ts';
export { SqlStore } from './sql-store.ts';

/** PostgreSQL's driver, loaded on first use: the embedded mode has no use for its client (~9 MB). */
export const loadPgDriver = async () => (await import('./pg-driver.ts')).PgDriver;
