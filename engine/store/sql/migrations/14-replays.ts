import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 14,
  name: 'bulk replays',
  // A bulk replay keeps where it is (cursor, counts) and when it may next start runs (next_at), so that any
  // worker goes on with it after a crash, at its rate. A run it started names the run it replays.
  sql: `create table replays (
      tenant_id text not null references tenants (id) on delete cascade,
      id uuid not null,
      request_key text,
      filter jsonb not null,
      rate_per_second integer not null,
      status text not null default 'running',
      total integer not null,
      replayed integer not null default 0,
      skipped integer not null default 0,
      cursor uuid,
      next_at timestamptz not null default now(),
      created_at timestamptz not null default now(),
      finished_at timestamptz,
      primary key (tenant_id, id));
    create unique index replays_request_key on replays (tenant_id, request_key) where request_key is not null;
    create index replays_due on replays (next_at) where status = 'running';
    alter table runs add column replay_of uuid, add column replay_id uuid;`,
};
