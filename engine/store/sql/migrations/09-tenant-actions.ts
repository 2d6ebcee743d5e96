import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 9,
  name: 'tenant actions',
  sql: `
    create table actions (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      version integer not null,
      description text,
      expression text not null,
      input_schema jsonb not null,
      output_schema jsonb not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, name, version)
    );
  `,
};
