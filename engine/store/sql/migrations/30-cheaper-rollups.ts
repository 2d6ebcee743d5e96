import type { Migration } from './migration.ts';
import { countFinishedRuns } from './22-daily-rollups.ts';
import { TERMINAL } from './26-flow-control.ts';

/**
 * The rollups' trigger, a fifth of PostgreSQL's CPU in the engine bench (perf), at less cost:
 * - Its histograms were SQL functions, which PostgreSQL parses and plans again in every statement that calls them:
 *   half the trigger's time. In PL/pgSQL they are planned once a session and loop over the buckets (2-6 times
 *   faster, measured on 100-bucket histograms); they answer what migration 22's did.
 * - Most updates of runs finish none (a worker beginning runs, a checkpoint of runs that go on), and it ran its whole
 *   statement for them all the same: it now returns at once when no row the statement left is finished.
 */
export const migration: Migration = {
  version: 30,
  name: 'cheaper rollups',
  sql: `
    create or replace function histogram(buckets int[], counts bigint[]) returns bigint[] language plpgsql immutable
      parallel safe as $$
    declare
      top int := (select max(b) from unnest(buckets) b);
      counted bigint[];
    begin
      if top is null or top < 0 then return null; end if;
      counted := array_fill(0::bigint, array[top + 1]);
      for i in 1 .. cardinality(buckets) loop
        continue when buckets[i] is null or buckets[i] < 0;
        counted[buckets[i] + 1] := counted[buckets[i] + 1] + coalesce(counts[i], 0);
      end loop;
      return counted;
    end $$;
    create or replace function add_histograms(a bigint[], b bigint[]) returns bigint[] language plpgsql immutable
      parallel safe as $$
    declare
      buckets int := coalesce(greatest(cardinality(a), cardinality(b)), 0);
      sum bigint[];
    begin
      if buckets = 0 then return null; end if;
      sum := array_fill(0::bigint, array[buckets]);
      for i in 1 .. buckets loop
        sum[i] := coalesce(a[i], 0) + coalesce(b[i], 0);
      end loop;
      return sum;
    end $$;
${countFinishedRuns(TERMINAL, true)}
  `,
};
