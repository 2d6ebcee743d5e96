import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 3,
  name: 'batches and incremental fields',
  sql: `
    -- A task is a run of the nodes after a fan-out node, for one item of its batch.
    alter table runs add column batch_id uuid;
    create table batches (
      tenant_id text not null references tenants(id) on delete cascade,
      id uuid not null,
      flow_id uuid not null,
      flow_version integer not null,
      run_id uuid not null,
      node_id text not null,
      status text not null,
      window_from timestamptz,
      window_to timestamptz,
      created_at timestamptz not null default now(),
      finished_at timestamptz,
      primary key (tenant_id, id)
    );
    create index batches_by_flow on batches (tenant_id, flow_id, id desc);
    create table batch_tasks (
      seq bigint generated always as identity,
      tenant_id text not null,
      batch_id uuid not null,
      key text not null,
      run_id uuid not null,
      retries integer not null default 0,
      primary key (tenant_id, batch_id, key),
      foreign key (tenant_id, batch_id) references batches (tenant_id, id) on delete cascade
    );
    create table incremental_fields (
      tenant_id text not null references tenants(id) on delete cascade,
      flow_id uuid not null,
      field text not null,
      value timestamptz,
      moved_at timestamptz,
      overlap_ms integer not null,
      updated_at timestamptz not null default now(),
      primary key (tenant_id, flow_id)
    );
  `,
};
