import type { Migration } from './migration.ts';

/** When a time-ordered id (UUIDv7, ids.ts) was made, in ms since 1970. */
const ID_MS = (id: string) => `('x' || lpad(substr(replace(${id}::text, '-', ''), 1, 12), 16, '0'))::bit(64)::bigint`;

/** Message and run indexes, as they were: the old tables keep theirs, and the partitioned ones adopt them. */
const RUN_INDEXES = [
  'runs_by_flow on runs (tenant_id, flow_id, id desc)',
  'runs_by_status on runs (tenant_id, status, id desc)',
  'runs_by_message on runs (tenant_id, message_id, id)',
  'runs_children on runs (tenant_id, parent_run_id) where parent_run_id is not null',
  "runs_unfinished on runs (created_at, id) where status in ('queued', 'running', 'waiting')",
  "runs_held on runs (tenant_id, created_at) where status = 'held'",
  "runs_failed_by_finish on runs (tenant_id, finished_at) where status = 'failed'",
];
const MESSAGE_INDEXES = [
  'messages_by_topic on messages (tenant_id, topic, id desc)',
  'messages_duplicates on messages (tenant_id, id) where duplicate_of is not null',
];

/** Moves `table` aside as `<table>_legacy` with its indexes renamed, to become a partition of its successor. */
const setAside = (table: string, indexes: string[]) => `
    alter table ${table} rename to ${table}_legacy;
    alter table ${table}_legacy rename constraint ${table}_pkey to ${table}_legacy_pkey;
    ${indexes.map((index) => `alter index ${index.split(' ')[0]} rename to legacy_${index.split(' ')[0]};`).join('\n    ')}
    alter table ${table}_legacy add column keep_days smallint not null default 0;`;

/** History partitions span a week of ids, from multiples of it since 1970 (a Thursday, 00:00 UTC). */
export const PARTITION_SPAN_MS = 7 * 86_400_000;

export const migration: Migration = {
  version: 20,
  name: 'retention: messages, runs and steps by week and kept days',
  // Messages, runs and steps are partitioned by the week their id was made in (UUIDv7), then by how many days
  // they are kept (keep_days, the tenant's retention when they were written): a week's rows of one retention
  // leave the store as one DROP TABLE (decision 24). Rows that must outlive their partition (unfinished runs,
  // failed ones kept longer, messages replayed later) are moved to a longer one before it is dropped. What was
  // there before is kept as a partition of its own ("legacy", below every week), pruned row by row.
  // Repeated deliveries are recognised through deliveries: a unique key cannot span partitions.
  sql: `
    create function id_ms(id uuid) returns bigint language sql immutable parallel safe
      return ${ID_MS('id')};
    -- The smallest id made at epoch_ms or later.
    create function id_at(epoch_ms bigint) returns uuid language sql immutable parallel safe
      return (lpad(to_hex(greatest(epoch_ms, 0)), 12, '0') || '70008000000000000000')::uuid;

    create table retention_policy (
      only_row boolean primary key default true check (only_row),
      days smallint not null,
      failed_days smallint not null,
      max_days smallint not null
    );
    insert into retention_policy (days, failed_days, max_days) values (30, 30, 90);
    -- The days a tenant's new rows are kept: its own setting within the operator's maximum, else the default.
    create function keep_days(tenant text) returns smallint language sql stable parallel safe
      return (select least(coalesce((t.limits->>'retentionDays')::smallint, p.days), p.max_days)
                from tenants t, retention_policy p where t.id = tenant);

    ${setAside('messages', MESSAGE_INDEXES)}
    alter table messages_legacy drop constraint messages_tenant_id_flow_id_delivery_id_key;
    ${setAside('runs', RUN_INDEXES)}
    -- A run whose message was run again since (a replay, a retry): set as the later run is made.
    alter table runs_legacy add column superseded boolean not null default false;
    update runs_legacy r set superseded = true
     where exists (select 1 from runs_legacy l where l.tenant_id = r.tenant_id and l.message_id = r.message_id
                     and l.id > r.id);
    drop trigger count_finished_runs on runs_legacy;
    drop trigger uncount_replaced_outcomes on runs_legacy;
    drop trigger count_messages on messages_legacy;
    ${setAside('steps', [])}
    alter table steps_legacy drop constraint steps_tenant_id_run_id_fkey;
    alter table steps_legacy alter column seq drop identity;

    create table messages (like messages_legacy including defaults) partition by range (id);
    create table runs (like runs_legacy including defaults) partition by range (id);
    create sequence steps_seq as bigint;
    select setval('steps_seq', coalesce((select max(seq) from steps_legacy), 0) + 1, false);
    create table steps (like steps_legacy including defaults) partition by range (run_id);
    alter table steps alter column seq set default nextval('steps_seq');
    alter sequence steps_seq owned by steps.seq;
    alter table messages add foreign key (tenant_id) references tenants (id) on delete cascade;
    alter table runs add foreign key (tenant_id) references tenants (id) on delete cascade;
    alter table steps add foreign key (tenant_id) references tenants (id) on delete cascade;
    ${[...MESSAGE_INDEXES, ...RUN_INDEXES].map((index) => `create index ${index};`).join('\n    ')}
    create unique index steps_by_run on steps (tenant_id, run_id, key, keep_days);
    create unique index legacy_steps_by_run on steps_legacy (tenant_id, run_id, key, keep_days);
    -- Runs made for a message of an earlier day (replays, retries): their messages outlive their day.
    create index runs_of_earlier_messages on runs (message_id)
      where id_ms(id) / ${PARTITION_SPAN_MS} <> id_ms(message_id) / ${PARTITION_SPAN_MS};
    -- Rows kept longer than their day's retention are found by these, not by reading the day.
    create index runs_kept_longer on runs (tenant_id, status) where status in ('failed', 'handled');

    -- The old rows, below every week to come; a new store has none and no legacy partition.
    do $$
    declare bound uuid := id_at(((extract(epoch from now()) * 1000)::bigint / ${PARTITION_SPAN_MS} + 1)
      * ${PARTITION_SPAN_MS});
    begin
      if exists (select 1 from runs_legacy) or exists (select 1 from messages_legacy) then
        execute format('alter table messages attach partition messages_legacy for values from (minvalue) to (%L)',
          bound);
        execute format('alter table runs attach partition runs_legacy for values from (minvalue) to (%L)', bound);
        execute format('alter table steps attach partition steps_legacy for values from (minvalue) to (%L)', bound);
      else
        drop table messages_legacy, runs_legacy, steps_legacy;
      end if;
    end $$;

    create trigger count_finished_runs after update on runs referencing old table as old_runs new table as new_runs
      for each statement execute function count_finished_runs();
    create trigger count_messages after insert on messages referencing new table as new_messages
      for each statement execute function count_messages();

    -- A delivery id is recognised for 7 days (Shopify retries for 48 hours, Stripe keeps idempotency keys 24 h),
    -- here rather than by a unique key of messages, which cannot span partitions. Narrow rows, deleted by day.
    create table deliveries (
      tenant_id text not null,
      flow_id uuid not null,
      delivery_id text not null,
      day date not null,
      message_id uuid not null,
      primary key (tenant_id, flow_id, delivery_id)
    );
    create index deliveries_by_day on deliveries (day);
    insert into deliveries (tenant_id, flow_id, delivery_id, day, message_id)
    select tenant_id, flow_id, delivery_id, (to_timestamp(id_ms(id) / 1000.0) at time zone 'UTC')::date, id
      from messages where delivery_id is not null and id >= id_at((extract(epoch from now()) * 1000)::bigint - 7 * 86400000)
    on conflict do nothing;

    -- A replay or a retry now marks the run it follows superseded and takes its outcome away itself
    -- (supersedeEarlierRuns): the trigger looked up every new run's predecessor, intake's too.
    drop function uncount_replaced_outcomes();
  `,
};
