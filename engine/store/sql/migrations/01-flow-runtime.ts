import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 1,
  name: 'flow runtime',
  sql: `
    create table tenants (
      id text primary key,
      name text not null,
      status text not null default 'active',
      created_at timestamptz not null default now()
    );
    create table clients (
      client_id text primary key,
      tenant_id text references tenants(id) on delete cascade,
      secret_hash text not null,
      scopes jsonb not null,
      operator boolean not null default false,
      created_at timestamptz not null default now()
    );
    create table signing_keys (
      kid text primary key,
      sealed_private_jwk jsonb not null,
      public_jwk jsonb not null,
      created_at timestamptz not null default now()
    );
    create table flows (
      tenant_id text not null references tenants(id) on delete cascade,
      id uuid not null,
      key text not null,
      name text not null,
      draft jsonb not null,
      revision integer not null default 1,
      active_version integer,
      latest_version integer,
      active boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id),
      unique (tenant_id, key)
    );
    create table flow_versions (
      tenant_id text not null,
      flow_id uuid not null,
      version integer not null,
      document jsonb not null,
      published_at timestamptz not null default now(),
      primary key (tenant_id, flow_id, version),
      foreign key (tenant_id, flow_id) references flows (tenant_id, id) on delete cascade
    );
    create table variables (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      value jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
    create table secrets (
      tenant_id text not null references tenants(id) on delete cascade,
      name text not null,
      key_id text not null,
      ciphertext text not null,
      fingerprint text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
    -- Messages and runs outlive a deleted flow: they are the tenant's history.
    create table messages (
      tenant_id text not null references tenants(id) on delete cascade,
      id uuid not null,
      flow_id uuid not null,
      flow_version integer not null,
      delivery_id text,
      body jsonb not null,
      headers jsonb not null,
      query jsonb not null,
      received_at timestamptz not null default now(),
      primary key (tenant_id, id),
      unique (tenant_id, flow_id, delivery_id)
    );
    create table runs (
      tenant_id text not null references tenants(id) on delete cascade,
      id uuid not null,
      flow_id uuid not null,
      flow_version integer not null,
      message_id uuid not null,
      status text not null,
      attempts integer not null default 0,
      error jsonb,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      primary key (tenant_id, id)
    );
    create index runs_by_flow on runs (tenant_id, flow_id, id desc);
    create index runs_by_status on runs (tenant_id, status, id desc);
    create table steps (
      seq bigint generated always as identity, -- the order steps were first recorded in
      tenant_id text not null,
      run_id uuid not null,
      key text not null,
      node_id text not null,
      status text not null,
      attempts integer not null,
      output jsonb,
      error jsonb,
      started_at timestamptz not null,
      finished_at timestamptz,
      primary key (tenant_id, run_id, key),
      foreign key (tenant_id, run_id) references runs (tenant_id, id) on delete cascade
    );
  `,
};
