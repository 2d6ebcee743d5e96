import type { Migration } from './migration.ts';

/**
 * Each leaf of runs keeps statistics of tenant and status together (`<leaf>_tenant_status`, most common pairs): a
 * status rare for one tenant and common for others (`cancelled`) was estimated from each alone, and a page of a
 * tenant's messages of that status was read by scanning the tenant's week backwards for rows it had none of
 * (6,388 rows for a page of none). New leaves get theirs as they are made (retention.ts).
 */
export const migration: Migration = {
  version: 29,
  name: 'run status statistics',
  sql: `do $$
    declare leaf text;
    begin
      for leaf in select c.relname from pg_partition_tree('runs') t join pg_class c on c.oid = t.relid where t.isleaf
      loop
        execute format('create statistics if not exists %I (mcv) on tenant_id, status from %I',
          leaf || '_tenant_status', leaf);
      end loop;
    end $$;`,
};
