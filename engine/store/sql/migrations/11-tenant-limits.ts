import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 11,
  name: 'tenant limits',
  // An operator's overrides of the deployment's per-tenant settings (weight, concurrency, quotas).
  sql: `alter table tenants add column limits jsonb not null default '{}';`,
};
