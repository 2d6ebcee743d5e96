import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 7,
  name: 'data spaces',
  sql: `
    create table data_spaces (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      description text,
      created_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
    create table data_documents (
      tenant_id text not null,
      space text not null,
      key text not null,
      value jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, space, key),
      foreign key (tenant_id, space) references data_spaces (tenant_id, name) on delete cascade
    );
  `,
};
