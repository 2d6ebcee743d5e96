import type { Migration } from './migration.ts';
import { BUCKET, finishedRuns, ID_HOUR, TERMINAL } from './19-rollups.ts';

/** Each key a rollup counts by: its hour (span 'h') and its day ('d'), the `hour` of `rows` truncated to each. */
const BY_HOUR_AND_DAY = (rows: string) => `select r.*, s.span,
             date_trunc(case s.span when 'h' then 'hour' else 'day' end, r.hour, 'UTC') as period
        from ${rows} r cross join (values ('h'::"char"), ('d'::"char")) s (span)`;

/**
 * The trigger function that counts the runs a statement finished by the hour and the day, their outcomes and their
 * histograms; `terminal` lists the finished statuses. `onlyWhenFinishing`: a statement that leaves no run finished
 * returns at once (migration 30).
 */
export const countFinishedRuns = (
  terminal: string,
  onlyWhenFinishing = false,
) => `    create or replace function count_finished_runs() returns trigger language plpgsql as $$
    begin${
      onlyWhenFinishing
        ? `
      if not exists (select from new_runs where status in ${terminal}) then return null; end if;`
        : ''
    }
      with finished as (${finishedRuns(terminal)}
      ), spans as (
        ${BY_HOUR_AND_DAY('finished')}
      ), counted as (
        insert into run_counts as c (tenant_id, span, period, flow_id, status, runs)
        select tenant_id, span, period, flow_id, status, count(*) from spans group by 1, 2, 3, 4, 5
         order by 1, 2, 3, 4, 5
        on conflict (tenant_id, span, period, flow_id, status) do update set runs = c.runs + excluded.runs
      ), outcomes as (
        insert into message_outcomes as c (tenant_id, hour, status, messages)
        select tenant_id, message_hour, status, count(*) from finished group by 1, 2, 3 order by 1, 2, 3
        on conflict (tenant_id, hour, status) do update set messages = c.messages + excluded.messages
      ), binned as (
        select tenant_id, span, period, flow_id, measure, bucket, count(*) as n from (
          select tenant_id, span, period, flow_id, 'd'::"char" as measure, ${BUCKET('duration')} as bucket from spans
          union all
          select tenant_id, span, period, flow_id, 'l'::"char", ${BUCKET('latency')} from spans) b
         group by 1, 2, 3, 4, 5, 6
      )
      insert into run_timings as t (tenant_id, span, period, flow_id, measure, runs)
      select tenant_id, span, period, flow_id, measure, histogram(array_agg(bucket), array_agg(n)) from binned
       group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
      on conflict (tenant_id, span, period, flow_id, measure) do update set runs = add_histograms(t.runs, excluded.runs);
      return null;
    end $$;`;

export const migration: Migration = {
  version: 22,
  name: 'daily rollups, a histogram a row',
  // A month of daily statistics read 720 hourly counts a flow and status and a row per histogram bucket (15,000
  // rows for a busy tenant's month, 30 ms): counts are now kept by the day as well as by the hour, and a
  // histogram is one row, its counts an array indexed by bucket (decision 23). A month reads 30 rows a flow.
  sql: `
    -- A histogram as an array of counts, bucket b at index b + 1, from its buckets' counts.
    create function histogram(buckets int[], counts bigint[]) returns bigint[] language sql immutable parallel safe
      as $$ select array_agg(coalesce(c.n, 0) order by i)
              from generate_series(0, (select max(b) from unnest(buckets) b)) i
              left join unnest(buckets, counts) c (b, n) on c.b = i $$;
    create function add_histograms(a bigint[], b bigint[]) returns bigint[] language sql immutable parallel safe
      as $$ select array_agg(coalesce(a[i], 0) + coalesce(b[i], 0) order by i)
              from generate_series(1, greatest(cardinality(a), cardinality(b))) i $$;

    alter table run_counts rename column hour to period;
    alter table run_counts add column span "char" not null default 'h';
    alter table run_counts alter column span drop default;
    alter table run_counts drop constraint run_counts_pkey;
    alter table run_counts add primary key (tenant_id, span, period, flow_id, status);
    insert into run_counts (tenant_id, span, period, flow_id, status, runs)
    select tenant_id, 'd', date_trunc('day', period, 'UTC'), flow_id, status, sum(runs) from run_counts
     group by 1, 3, 4, 5;

    alter table message_counts rename column hour to period;
    alter table message_counts add column span "char" not null default 'h';
    alter table message_counts alter column span drop default;
    alter table message_counts drop constraint message_counts_tenant_id_hour_flow_id_topic_key;
    alter table message_counts add constraint message_counts_key unique nulls not distinct
      (tenant_id, span, period, flow_id, topic);
    insert into message_counts (tenant_id, span, period, flow_id, topic, messages, duplicates)
    select tenant_id, 'd', date_trunc('day', period, 'UTC'), flow_id, topic, sum(messages), sum(duplicates)
      from message_counts group by 1, 3, 4, 5;

    create temporary table histograms on commit drop as
    select tenant_id, span, period, flow_id, measure, histogram(array_agg(bucket::int), array_agg(runs)) as runs
      from run_timings group by 1, 2, 3, 4, 5;
    delete from run_timings;
    alter table run_timings drop constraint run_timings_pkey, drop column bucket,
      alter column runs type bigint[] using array[runs], add primary key (tenant_id, span, period, flow_id, measure);
    insert into run_timings (tenant_id, span, period, flow_id, measure, runs)
    select tenant_id, span, period, flow_id, measure, runs from histograms;

${countFinishedRuns(TERMINAL)}

    create or replace function count_messages() returns trigger language plpgsql as $$
    begin
      with arrived as (
        select tenant_id, ${ID_HOUR('id')} as hour, flow_id, topic, duplicate_of from new_messages
      )
      insert into message_counts as c (tenant_id, span, period, flow_id, topic, messages, duplicates)
      select tenant_id, span, period, flow_id, topic,
             count(*) filter (where duplicate_of is null), count(*) filter (where duplicate_of is not null)
        from (${BY_HOUR_AND_DAY('arrived')}) a group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
      on conflict (tenant_id, span, period, flow_id, topic) do update
        set messages = c.messages + excluded.messages, duplicates = c.duplicates + excluded.duplicates;
      return null;
    end $$;
  `,
};
