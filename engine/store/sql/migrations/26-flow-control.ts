import type { Migration } from './migration.ts';
import { uncountReplacedOutcomes } from './19-rollups.ts';
import { countFinishedRuns } from './22-daily-rollups.ts';

/** The finished statuses as of this migration: `debounced` is new. */
export const TERMINAL = "('succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled', 'debounced')";

/**
 * A run's keys (flowControl) as its message gave them, kept so that the lanes can be rebuilt from the store after
 * Redis lost them and a replay keeps its concurrency key; and the run that took a debounced run's place. Null for most
 * runs: adding them rewrites nothing. A debounced run is finished: the rollups count it.
 */
export const migration: Migration = {
  version: 26,
  name: 'flow control',
  sql: `
    alter table runs add column concurrency jsonb, add column debounce jsonb, add column debounced_by uuid,
      add column budget_wait_ms bigint;
    -- Of a bulk replay's runs among the tenant's waiting runs: the lowest (5) unless asked.
    alter table replays add column priority smallint not null default 5;
    ${countFinishedRuns(TERMINAL)}
    ${uncountReplacedOutcomes(TERMINAL, 'create or replace')}
  `,
};
