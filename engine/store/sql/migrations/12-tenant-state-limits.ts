import type { Migration } from './migration.ts';

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

export const migration: Migration = {
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
};
