import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 6,
  name: 'platform values',
  sql: `
    create table platform_globals (
      name text primary key,
      value jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create table platform_tenant_globals (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      value jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
  `,
};
