import type { Migration } from './migration.ts';

/** The finished statuses when this was written: a status added later comes with a migration of its own. */
export const TERMINAL = "('succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled')";

/** The UTC hour a time-ordered id (UUIDv7, ids.ts) was made in: a message's, the moment it arrived. */
export const ID_HOUR = (id: string) =>
  `date_trunc('hour', to_timestamp(('x' || lpad(substr(replace(${id}::text, '-', ''), 1, 12), 16, '0'))::bit(64)::bigint
    / 1000.0), 'UTC')`;

/**
 * The runs a statement finished (transition tables new_runs and old_runs), each with its hour, its message's hour,
 * its duration and its latency in ms; `terminal` lists the finished statuses (as of the migration that uses it).
 */
export const finishedRuns = (terminal: string) => `
        select n.tenant_id, date_trunc('hour', n.created_at, 'UTC') as hour, ${ID_HOUR('n.message_id')} as message_hour,
               n.flow_id, n.status,
               date_part('epoch', coalesce(n.finished_at, now()) - coalesce(n.started_at, n.created_at)) * 1000
                 as duration,
               date_part('epoch', coalesce(n.finished_at, now()) - n.created_at) * 1000 as latency
          from new_runs n
         -- Not a join: transition tables have no statistics, and a nested loop would pair their rows one by one.
         -- Ids are unique across tenants (UUIDv7), and a run finished before is never counted again.
         where n.status in ${terminal} and n.id not in (select o.id from old_runs o where o.status in ${terminal})`;

/**
 * The trigger function that takes a replaced run's outcome off its message's count (a run made for a message that has
 * runs already); `terminal` lists the finished statuses.
 */
export const uncountReplacedOutcomes = (terminal: string, create = 'create') => `
    ${create} function uncount_replaced_outcomes() returns trigger language plpgsql as $$
    begin
      insert into message_outcomes as c (tenant_id, hour, status, messages)
      select n.tenant_id, ${ID_HOUR('n.message_id')}, earlier.status, -count(*)
        from new_runs n cross join lateral (
          select r.status from runs r where r.tenant_id = n.tenant_id and r.message_id = n.message_id and r.id < n.id
           order by r.id desc limit 1) earlier
       where earlier.status in ${terminal}
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (tenant_id, hour, status) do update set messages = c.messages + excluded.messages;
      return null;
    end $$;`;

/** A run's duration or latency in ms as its histogram bucket: 0 below 1 ms, then 8 a doubling (each ≤ 9 % wide). */
export const BUCKET = (ms: string) =>
  `case when ${ms} < 1 then 0 else least(floor(ln(${ms}) / ln(2) * 8)::int + 1, 400) end`;

export const migration: Migration = {
  version: 19,
  name: 'rollups, and repeated deliveries by tenant',
  // Statistics and dashboards count from these, not from runs and messages: a read costs what its range of
  // hours holds, whatever the store's size. Finished runs are counted by the hour they were created in, once,
  // as they finish (a finished run never changes status again); unfinished ones are few and read from runs.
  // Statement triggers keep them whichever path changed a run, one upsert per key and statement, in key order
  // (so two statements never wait on each other's keys in opposite orders).
  sql: `
    create table run_counts (
      tenant_id text not null references tenants (id) on delete cascade,
      hour timestamptz not null,
      flow_id uuid not null,
      status text not null,
      runs bigint not null,
      primary key (tenant_id, hour, flow_id, status)
    );
    -- Histograms of finished runs' durations (measure 'd': first start to finish) and latencies ('l': creation to
    -- finish), by the hour (span 'h') and by the day ('d'): a month's daily percentiles read 30 rows a bucket, not 720.
    create table run_timings (
      tenant_id text not null references tenants (id) on delete cascade,
      span "char" not null,
      period timestamptz not null,
      flow_id uuid not null,
      measure "char" not null,
      bucket smallint not null,
      runs bigint not null,
      primary key (tenant_id, span, period, flow_id, measure, bucket)
    );
    create table message_counts (
      tenant_id text not null references tenants (id) on delete cascade,
      hour timestamptz not null,
      flow_id uuid not null,
      topic text,
      messages bigint not null,
      duplicates bigint not null,
      unique nulls not distinct (tenant_id, hour, flow_id, topic)
    );
    -- Messages by the hour they arrived and the status their latest run ended with: a finished run adds its
    -- message, a later run of the message (a replay, a retry) takes the earlier one's away. A message whose latest
    -- run is unfinished is read from runs (few); a repeated delivery from message_counts.
    create table message_outcomes (
      tenant_id text not null references tenants (id) on delete cascade,
      hour timestamptz not null,
      status text not null,
      messages bigint not null,
      primary key (tenant_id, hour, status)
    );
    create function count_finished_runs() returns trigger language plpgsql as $$
    begin
      with finished as (${finishedRuns(TERMINAL)}), counted as (
        insert into run_counts as c (tenant_id, hour, flow_id, status, runs)
        select tenant_id, hour, flow_id, status, count(*) from finished group by 1, 2, 3, 4 order by 1, 2, 3, 4
        on conflict (tenant_id, hour, flow_id, status) do update set runs = c.runs + excluded.runs
      ), outcomes as (
        insert into message_outcomes as c (tenant_id, hour, status, messages)
        select tenant_id, message_hour, status, count(*) from finished group by 1, 2, 3 order by 1, 2, 3
        on conflict (tenant_id, hour, status) do update set messages = c.messages + excluded.messages
      )
      insert into run_timings as t (tenant_id, span, period, flow_id, measure, bucket, runs)
      select tenant_id, span, date_trunc(case span when 'h' then 'hour' else 'day' end, hour, 'UTC'), flow_id, measure,
             bucket, count(*)
        from (
          select tenant_id, hour, flow_id, 'd'::"char" as measure, ${BUCKET('duration')} as bucket from finished
          union all
          select tenant_id, hour, flow_id, 'l'::"char", ${BUCKET('latency')} from finished) f
        cross join (values ('h'::"char"), ('d'::"char")) spans (span)
       group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6
      on conflict (tenant_id, span, period, flow_id, measure, bucket) do update set runs = t.runs + excluded.runs;
      return null;
    end $$;
    create trigger count_finished_runs after update on runs referencing old table as old_runs new table as new_runs
      for each statement execute function count_finished_runs();
    -- A run made for a message that has runs already (a replay, a retry) is its latest now: the earlier one's
    -- outcome no longer counts. Looked up by runs_by_message; a new message's run finds none.${uncountReplacedOutcomes(TERMINAL)}
    create trigger uncount_replaced_outcomes after insert on runs referencing new table as new_runs
      for each statement execute function uncount_replaced_outcomes();
    create function count_messages() returns trigger language plpgsql as $$
    begin
      insert into message_counts as c (tenant_id, hour, flow_id, topic, messages, duplicates)
      select tenant_id, ${ID_HOUR('id')}, flow_id, topic,
             count(*) filter (where duplicate_of is null), count(*) filter (where duplicate_of is not null)
        from new_messages group by 1, 2, 3, 4 order by 1, 2, 3, 4
      on conflict (tenant_id, hour, flow_id, topic) do update
        set messages = c.messages + excluded.messages, duplicates = c.duplicates + excluded.duplicates;
      return null;
    end $$;
    create trigger count_messages after insert on messages referencing new table as new_messages
      for each statement execute function count_messages();
    -- A message's latest run, read with every message and by the trigger above for every new run: the index
    -- gives it in one step, where (tenant, message) alone left the planner a walk back through the tenant's runs.
    drop index runs_by_message;
    create index runs_by_message on runs (tenant_id, message_id, id);
    -- Messages listed by status 'duplicate' are found among the repeated deliveries alone.
    create index messages_duplicates on messages (tenant_id, id) where duplicate_of is not null;
    -- What is already there: one pass over runs and messages, at the upgrade.
    insert into run_counts (tenant_id, hour, flow_id, status, runs)
    select tenant_id, date_trunc('hour', created_at, 'UTC'), flow_id, status, count(*)
      from runs where status in ${TERMINAL} group by 1, 2, 3, 4;
    insert into run_timings (tenant_id, span, period, flow_id, measure, bucket, runs)
    select tenant_id, span, date_trunc(case span when 'h' then 'hour' else 'day' end, created_at, 'UTC'), flow_id,
           measure, bucket, count(*)
      from (
        select tenant_id, created_at, flow_id, 'd'::"char" as measure,
               ${BUCKET("date_part('epoch', coalesce(finished_at, created_at) - coalesce(started_at, created_at)) * 1000")}
                 as bucket
          from runs where status in ${TERMINAL}
        union all
        select tenant_id, created_at, flow_id, 'l'::"char",
               ${BUCKET("date_part('epoch', coalesce(finished_at, created_at) - created_at) * 1000")}
          from runs where status in ${TERMINAL}) f
      cross join (values ('h'::"char"), ('d'::"char")) spans (span)
     group by 1, 2, 3, 4, 5, 6;
    insert into message_counts (tenant_id, hour, flow_id, topic, messages, duplicates)
    select tenant_id, ${ID_HOUR('id')}, flow_id, topic,
           count(*) filter (where duplicate_of is null), count(*) filter (where duplicate_of is not null)
      from messages group by 1, 2, 3, 4;
    insert into message_outcomes (tenant_id, hour, status, messages)
    select m.tenant_id, ${ID_HOUR('m.id')}, latest.status, count(*)
      from messages m cross join lateral (
        select status from runs r where r.tenant_id = m.tenant_id and r.message_id = m.id order by r.id desc limit 1
      ) latest
     where latest.status in ${TERMINAL} group by 1, 2, 3;
  `,
};
