import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 10,
  name: 'unfinished runs',
  // The queue reconciler's look-up across tenants: small, as only unfinished runs are in it.
  sql: `create index runs_unfinished on runs (created_at, id) where status in ('queued', 'running', 'waiting');`,
};
