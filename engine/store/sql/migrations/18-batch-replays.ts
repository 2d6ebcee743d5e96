import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 18,
  name: 'bulk replays of a batch',
  // A replay of a batch's failed tasks goes through them in the batch's order: where it stands, by task.
  sql: 'alter table replays add column cursor_seq bigint;',
};
