import type { Migration } from './migration.ts';

/**
 * A step no longer references its tenant. Every step is written for a run of the statement's own (looked up by its
 * key), so the reference checked nothing, and it cost the worker's checkpoint a lookup of the tenant for each step,
 * taking a share lock on the tenant's row: a tenth of the checkpoint statement's time (auto_explain, engine bench),
 * and every worker of a busy tenant sharing the lock on one row. A tenant's steps are deleted with it (deleteTenant),
 * as its deliveries are.
 */
export const migration: Migration = {
  version: 31,
  name: 'steps without a reference to their tenant',
  sql: 'alter table steps drop constraint steps_tenant_id_fkey;',
};
