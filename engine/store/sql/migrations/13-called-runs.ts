import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 13,
  name: 'called runs',
  // A run a call node started knows its caller, and how deep the calls go (a cycle of calls is bounded).
  sql: `alter table runs add column parent_run_id uuid, add column call_depth integer not null default 0;
    create index runs_children on runs (tenant_id, parent_run_id) where parent_run_id is not null;`,
};
