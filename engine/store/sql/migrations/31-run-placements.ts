import type { Migration } from './migration.ts';

/**
 * Tenants (or environments) an operator moved to a slot group of the run path, and the move under way (decision 30):
 * kept in the store, not in Redis, so that a move outlives a loss of Redis data and no tenant is served by two
 * groups at once.
 */
export const migration: Migration = {
  version: 31,
  name: 'run placements',
  sql: `create table run_placements (
    tenant_id text primary key references tenants (id) on delete cascade,
    run_group integer not null,
    moving_from integer,
    since timestamptz,
    draining boolean not null default false
  );`,
};
