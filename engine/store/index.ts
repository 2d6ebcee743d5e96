/**
 * The store: its port, which the rest of the engine and the API speak, and the SQL adapter that
 * implements it (PostgreSQL, and PGlite for the embedded mode).
 */
export * from './port.ts';
export { GroupCommit, type GroupCommitOptions } from './group-commit.ts';
export { SqlStore } from './sql/sql-store.ts';
export { PARTITIONS_AHEAD_MS } from './sql/aggregates/retention.ts';
export { PgliteDriver } from './sql/pglite-driver.ts';
export type { QueryOptions, SqlDriver, SqlExecutor } from './sql/driver.ts';
export { migrate, migrations } from './sql/migrations.ts';

/** PostgreSQL's driver, loaded on first use: the embedded mode has no use for its client (~9 MB). */
export const loadPgDriver = async () => (await import('./sql/pg-driver.ts')).PgDriver;
