import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 2,
  name: 'destinations',
  sql: `
    create table destinations (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      type text not null,
      settings jsonb not null,
      credentials_set jsonb not null,
      sealed_credentials jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
  `,
};
