import type { Migration } from './migration.ts';

/**
 * A message's status is its latest run's, the run no later one superseded (migration 20). Messages of a status
 * are found from those runs, in the order of their messages, however rare or common the status is for the tenant:
 * looked for from the messages, a status rare for a large tenant but common for another had the planner (which
 * estimates a status's share over every tenant) hash a scan of all the large tenant's messages, 12 s at 1 million.
 */
export const migration: Migration = {
  version: 21,
  name: 'messages by status',
  sql: 'create index runs_latest_by_status on runs (tenant_id, status, message_id desc) where not superseded;',
};
