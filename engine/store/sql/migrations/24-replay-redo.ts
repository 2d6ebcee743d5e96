import type { Migration } from './migration.ts';

/**
 * A replay carries over the steps the run it replays completed (issue 39): a bulk replay records whether it was
 * asked to run them again instead.
 */
export const migration: Migration = {
  version: 24,
  name: 'replay redo',
  sql: 'alter table replays add column redo_completed_steps boolean not null default false;',
};
