import type { Migration } from './migration.ts';

/**
 * A run's concurrency key (flowControl.concurrency) as its message gave it, kept so that the lanes can be rebuilt
 * from the store after Redis lost them, and so that a replay keeps it. Null for most runs: adding it rewrites nothing.
 */
export const migration: Migration = {
  version: 26,
  name: 'run concurrency keys',
  sql: 'alter table runs add column concurrency jsonb;',
};
