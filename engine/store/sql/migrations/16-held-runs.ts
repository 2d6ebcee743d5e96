import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 16,
  name: 'held runs by age',
  // Held runs per tenant and the oldest of them, read at every metrics scrape: only held runs are read.
  sql: `create index runs_held on runs (tenant_id, created_at) where status = 'held';`,
};
