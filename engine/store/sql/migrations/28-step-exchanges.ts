import type { Migration } from './migration.ts';

/**
 * The requests a step's operation sent and their answers, masked and capped (decision 29): what a test recorded from
 * the run replays. Null for a step that sent none; adding it rewrites nothing.
 */
export const migration: Migration = {
  version: 28,
  name: 'step exchanges',
  sql: 'alter table steps add column exchanges jsonb;',
};
