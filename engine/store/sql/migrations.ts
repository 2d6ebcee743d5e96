import type { SqlDriver } from './driver.ts';

/** Versioned, append-only: a released migration never changes; a change is a new entry. */
export const migrations: Array<{ version: number; name: string; sql: string }> = [
  {
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
  },
  {
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
  },
  {
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
  },
  {
    version: 4,
    name: 'tenant suspension, message topics, blocked topics',
    sql: `
      alter table tenants add column suspended_reason text, add column suspended_at timestamptz;
      -- A repeated delivery is recorded too (without its body), pointing at the first.
      alter table messages add column topic text, add column duplicate_of uuid;
      -- Set while a run is 'held': 'suspended' (its tenant) or 'topic' (its message's topic is blocked).
      alter table runs add column held_by text;
      create index runs_by_message on runs (tenant_id, message_id);
      create index messages_by_topic on messages (tenant_id, topic, id desc);
      create table blocked_topics (
        tenant_id text not null references tenants(id) on delete cascade,
        topic text not null,
        reason text,
        blocked_at timestamptz not null default now(),
        primary key (tenant_id, topic)
      );
    `,
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
    version: 10,
    name: 'unfinished runs',
    // The queue reconciler's look-up across tenants: small, as only unfinished runs are in it.
    sql: `create index runs_unfinished on runs (created_at, id) where status in ('queued', 'running', 'waiting');`,
  },
  {
    version: 11,
    name: 'tenant limits',
    // An operator's overrides of the deployment's per-tenant settings (weight, concurrency, quotas).
    sql: `alter table tenants add column limits jsonb not null default '{}';`,
  },
];

/**
 * Apply pending migrations in one transaction: all or none. The advisory lock makes concurrent
 * starters (several API and worker processes) take turns; on PGlite there is only one.
 */
export async function migrate(driver: SqlDriver): Promise<number[]> {
  return driver.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7263541)');
    if (driver.schema) await tx.exec(`create schema if not exists ${driver.schema}`);
    await tx.query(`create table if not exists schema_migrations (
      version integer primary key, name text not null, applied_at timestamptz not null default now())`);
    const done = new Set(
      (await tx.query<{ version: number }>('select version from schema_migrations')).map((row) => row.version),
    );
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    return applied;
  });
}
