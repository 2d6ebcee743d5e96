import type { Migration } from './migration.ts';

/**
 * A tenant's environments other than production are rows of `tenants` (decision 28): `<tenant>~<environment>`, with
 * the tenant as parent, so that every tenant-owned table's reference, cascade, suspension and retention hold for them
 * as they do for the tenant. A client may be limited to some of its tenant's environments (null: all of them).
 */
export const migration: Migration = {
  version: 27,
  name: 'environments',
  sql: `
    alter table tenants add column parent_id text references tenants(id) on delete cascade,
      add column environment text not null default 'production';
    create unique index tenants_environments on tenants (parent_id, environment) where parent_id is not null;
    alter table clients add column environments jsonb;
  `,
};
