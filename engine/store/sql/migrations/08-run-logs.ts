import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 8,
  name: 'run logs',
  sql: `
    -- What operations log during runs; kept after their runs, pruned by age.
    create table run_logs (
      seq bigint generated always as identity,
      tenant_id text not null references tenants(id) on delete cascade,
      flow_id uuid not null,
      run_id uuid not null,
      node_id text not null,
      severity smallint not null,
      level text not null,
      message text not null,
      data jsonb,
      logged_at timestamptz not null,
      primary key (tenant_id, seq)
    );
    create index run_logs_by_run on run_logs (tenant_id, run_id, seq);
    create index run_logs_by_time on run_logs (logged_at);
  `,
};
