import type { SqlDriver } from './driver.ts';

/**
 * The tables whose rows count as a tenant's state (migration 12): the kind they count as, and whether
 * each row is an item of it or only adds its bytes (a flow's published versions).
 */
const USAGE_TRACKED = [
  ['flows', 'flows', 'items'],
  ['flow_versions', 'flows', 'bytes'],
  ['variables', 'variables', 'items'],
  ['secrets', 'secrets', 'items'],
  ['actions', 'action versions', 'items'],
  ['destinations', 'destinations', 'items'],
  ['data_spaces', 'data spaces', 'items'],
  ['data_documents', 'documents', 'items'],
] as const;

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
  {
    version: 12,
    name: 'tenant state limits',
    // What each tenant keeps (items and bytes per kind), counted by triggers as rows come and go, and the
    // deployment's limits on it: a write that would pass a limit fails in the database (SQLSTATE TQ001),
    // whichever path it took (the API, an operation in a run, a bulk put), and concurrent writers of one
    // tenant wait on its usage row, so none can pass the limit together.
    sql: `
      create table tenant_usage (
        tenant_id text not null references tenants(id) on delete cascade,
        kind text not null,
        items bigint not null default 0,
        bytes bigint not null default 0,
        primary key (tenant_id, kind)
      );
      create table tenant_state_limits (
        kind text primary key,
        max_items bigint,
        items_setting text,
        max_bytes bigint,
        bytes_setting text
      );
      create function track_tenant_usage() returns trigger language plpgsql as $$
      declare
        v_kind text := TG_ARGV[0];
        v_counted int := case when TG_ARGV[1] = 'items' then 1 else 0 end;
        v_items int := 0;
        v_bytes bigint := 0;
        v_tenant text;
        v_usage record;
        v_limit record;
      begin
        if TG_OP <> 'DELETE' then
          v_tenant := NEW.tenant_id;
          v_bytes := octet_length(row_to_json(NEW)::text);
          if TG_OP = 'INSERT' then v_items := v_counted; end if;
        end if;
        if TG_OP <> 'INSERT' then
          v_tenant := OLD.tenant_id;
          v_bytes := v_bytes - octet_length(row_to_json(OLD)::text);
          if TG_OP = 'DELETE' then v_items := -v_counted; end if;
        end if;
        if TG_OP = 'DELETE' then
          -- A tenant being deleted has no usage row left to update: nothing to do then.
          update tenant_usage set items = items + v_items, bytes = bytes + v_bytes
           where tenant_id = v_tenant and kind = v_kind;
          return null;
        end if;
        insert into tenant_usage as u (tenant_id, kind, items, bytes) values (v_tenant, v_kind, v_items, v_bytes)
          on conflict (tenant_id, kind) do update set items = u.items + excluded.items, bytes = u.bytes + excluded.bytes
          returning u.items, u.bytes into v_usage;
        select * into v_limit from tenant_state_limits l where l.kind = v_kind;
        if v_items > 0 and v_limit.max_items is not null and v_usage.items > v_limit.max_items then
          raise exception using errcode = 'TQ001', table = v_kind,
            message = format('the tenant may keep at most %s %s (%s)', v_limit.max_items, v_kind, v_limit.items_setting);
        end if;
        if v_bytes > 0 and v_limit.max_bytes is not null and v_usage.bytes > v_limit.max_bytes then
          raise exception using errcode = 'TQ001', table = v_kind,
            message = format('the tenant''s %s may take at most %s bytes in all (%s)', v_kind, v_limit.max_bytes,
              v_limit.bytes_setting);
        end if;
        return null;
      end $$;
      ${USAGE_TRACKED.map(
        ([table, kind, counted]) =>
          `create trigger usage_${table} after insert or update or delete on ${table}
             for each row execute function track_tenant_usage('${kind}', '${counted}');`,
      ).join('\n')}
      -- What tenants already keep.
      insert into tenant_usage (tenant_id, kind, items, bytes)
      select tenant_id, kind, sum(items), sum(bytes) from (
        ${USAGE_TRACKED.map(
          ([table, kind, counted]) =>
            `select tenant_id, '${kind}' as kind, ${counted === 'items' ? 1 : 0} as items,
               octet_length(row_to_json(t)::text) as bytes from ${table} t`,
        ).join(' union all ')}
      ) kept group by tenant_id, kind;
    `,
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
