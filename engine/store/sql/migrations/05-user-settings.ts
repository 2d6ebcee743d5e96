import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 5,
  name: 'user settings',
  sql: `
    create table user_settings (
      tenant_id text not null references tenants(id) on delete cascade,
      subject text not null,
      settings jsonb not null,
      updated_at timestamptz not null default now(),
      primary key (tenant_id, subject)
    );
  `,
};
