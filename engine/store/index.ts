/**
 * The store's port, which the rest of the engine and the API speak, and group commit (writes batched into one
 * statement). Its SQL adapter (PostgreSQL, and PGlite for the embedded mode) has a face of its own,
 * `sql/index.ts`, which only bin/ opens.
 */
export * from './port.ts';
export { GroupCommit, type GroupCommitOptions } from './group-commit.ts';
