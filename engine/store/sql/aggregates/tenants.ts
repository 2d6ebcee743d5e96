import {
  ConflictError,
  ENVIRONMENT_SEPARATOR,
  environmentId,
  MAX_ENVIRONMENTS,
  NotFoundError,
} from '../../../model/index.ts';
import type {
  PageRequest,
  RunPlacement,
  StateLimit,
  Tenant,
  TenantLimits,
  UserSettings,
  TenantStore,
} from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { PARTITIONS_AHEAD_MS, SqlRetention } from './retention.ts';
import { json, decodeCursor, iso, page, isUniqueViolation } from './rows.ts';
import { toEnvironment, toTenant, toUserSettings } from './row-mappers.ts';

/** Tenants, and the settings of their users. */
export class SqlTenants implements TenantStore {
  constructor(private readonly db: SqlDriver) {}

  async createTenant(tenant: { id: string; name: string }) {
    try {
      const [row] = await this.db.query('insert into tenants (id, name) values ($1, $2) returning *', [
        tenant.id,
        tenant.name,
      ]);
      return toTenant(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(`tenant ${tenant.id} exists already`);
      throw error;
    }
  }

  async getTenant(id: string) {
    const [row] = await this.db.query('select * from tenants where id = $1', [id]);
    return row ? toTenant(row) : undefined;
  }

  async listTenants(filter: { status?: Tenant['status'] }, request: PageRequest) {
    const rows = await this.db.query(
      `select * from tenants where parent_id is null and ($1::text is null or status = $1)
         and ($2::text is null or id > $2) order by id limit $3`,
      [filter.status ?? null, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toTenant, (r) => r.id);
  }

  async setTenantStatus(id: string, status: Tenant['status'], reason: string | null) {
    const rows = await this.db.query(
      `update tenants set status = $2, suspended_reason = case when $2 = 'suspended' then $3 end,
         suspended_at = case when $2 = 'suspended' then coalesce(suspended_at, now()) end
       where id = $1 or parent_id = $1 returning *`,
      [id, status, reason],
    );
    const row = rows.find((r) => r.id === id);
    return row ? toTenant(row) : undefined;
  }

  async setTenantLimits(id: string, limits: TenantLimits) {
    const rows = await this.db.query(
      'update tenants set limits = $2::jsonb where id = $1 or parent_id = $1 returning *',
      [id, JSON.stringify(limits)],
    );
    const row = rows.find((r) => r.id === id);
    // A retention no tenant had before needs partitions of its own from today on.
    if (row && (limits.retentionDays || limits.failedRetentionDays))
      await new SqlRetention(this.db).preparePartitions(Date.now(), Date.now() + PARTITIONS_AHEAD_MS);
    return row ? toTenant(row) : undefined;
  }

  async deleteTenant(id: string) {
    // Every tenant-owned table references tenants (or a table that does) with on delete cascade; deliveries, kept
    // lean for intake (migration 20), are deleted here.
    const deleted = await this.db.query(
      `with ids as (delete from deliveries where tenant_id = $1 or tenant_id like $2)
       delete from tenants where id = $1 and parent_id is null returning id`,
      [id, `${id}${ENVIRONMENT_SEPARATOR}%`],
    );
    return deleted.length > 0;
  }

  async createEnvironment(tenantId: string, name: string) {
    const rows = await this.db
      .query(
        `insert into tenants (id, name, parent_id, environment, status, suspended_reason, suspended_at, limits)
         select $3, t.name, t.id, $2, t.status, t.suspended_reason, t.suspended_at, t.limits from tenants t
          where t.id = $1 and t.parent_id is null and (select count(*) from tenants where parent_id = $1) < $4
         returning *`,
        [tenantId, name, environmentId(tenantId, name), MAX_ENVIRONMENTS],
      )
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) throw new ConflictError(`tenant ${tenantId} has an environment ${name} already`);
        throw error;
      });
    if (rows.length > 0) return toEnvironment(rows[0]);
    if (!(await this.getTenant(tenantId))) throw new NotFoundError(`no tenant ${tenantId}`);
    throw new ConflictError(
      `tenant ${tenantId} has ${MAX_ENVIRONMENTS} environments besides production, the most it may`,
    );
  }

  async listEnvironments(tenantId: string) {
    const rows = await this.db.query('select * from tenants where parent_id = $1 order by environment', [tenantId]);
    return rows.map(toEnvironment);
  }

  async deleteEnvironment(tenantId: string, name: string) {
    const id = environmentId(tenantId, name);
    const deleted = await this.db.query(
      `with ids as (delete from deliveries where tenant_id = $2)
       delete from tenants where parent_id = $1 and id = $2 returning id`,
      [tenantId, id],
    );
    return deleted.length > 0;
  }

  async setStateLimits(limits: StateLimit[]) {
    // Every process writes them as it starts, several at once on a new deployment: upserts, never a plain insert.
    await this.db.transaction(async (tx) => {
      await tx.query('delete from tenant_state_limits where kind <> all($1::text[])', [
        limits.map((limit) => limit.kind),
      ]);
      for (const limit of limits)
        await tx.query(
          `insert into tenant_state_limits (kind, max_items, items_setting, max_bytes, bytes_setting)
           values ($1, $2, $3, $4, $5)
           on conflict (kind) do update set max_items = excluded.max_items, items_setting = excluded.items_setting,
             max_bytes = excluded.max_bytes, bytes_setting = excluded.bytes_setting`,
          [limit.kind, limit.maxItems, limit.itemsSetting, limit.maxBytes, limit.bytesSetting],
        );
    });
  }

  async tenantUsage(tenantId: string) {
    const rows = await this.db.query(
      `select coalesce(u.kind, l.kind) as kind, coalesce(u.items, 0) as items, coalesce(u.bytes, 0) as bytes,
              l.max_items, l.max_bytes
         from (select * from tenant_usage where tenant_id = $1) u full join tenant_state_limits l on l.kind = u.kind`,
      [tenantId],
    );
    const orNull = (value: unknown) => (value === null ? null : Number(value));
    return Object.fromEntries(
      rows.map((row) => [
        row.kind,
        {
          items: Number(row.items),
          bytes: Number(row.bytes),
          maxItems: orNull(row.max_items),
          maxBytes: orNull(row.max_bytes),
        },
      ]),
    );
  }

  async getUserSettings(tenantId: string, subject: string) {
    const [row] = await this.db.query('select * from user_settings where tenant_id = $1 and subject = $2', [
      tenantId,
      subject,
    ]);
    return row ? toUserSettings(row) : undefined;
  }

  async putUserSettings(tenantId: string, subject: string, settings: UserSettings['settings']) {
    const [row] = await this.db.query(
      `insert into user_settings (tenant_id, subject, settings) values ($1, $2, $3::jsonb)
       on conflict (tenant_id, subject) do update set settings = excluded.settings, updated_at = now() returning *`,
      [tenantId, subject, json(settings)],
    );
    return toUserSettings(row);
  }
  async listRunPlacements(): Promise<RunPlacement[]> {
    const rows = await this.db.query('select * from run_placements order by tenant_id');
    return rows.map((row) => ({
      tenantId: row.tenant_id,
      group: row.run_group,
      movingFrom: row.moving_from,
      since: row.since === null ? null : iso(row.since),
      draining: row.draining,
    }));
  }

  async saveRunPlacement(placement: RunPlacement): Promise<void> {
    const rows = await this.db.query(
      `insert into run_placements (tenant_id, run_group, moving_from, since, draining)
       select id, $2, $3, $4, $5 from tenants where id = $1
       on conflict (tenant_id) do update set run_group = excluded.run_group, moving_from = excluded.moving_from,
         since = excluded.since, draining = excluded.draining
       returning 1`,
      [placement.tenantId, placement.group, placement.movingFrom, placement.since, placement.draining],
    );
    if (rows.length === 0) throw new NotFoundError(`no tenant ${placement.tenantId}`);
  }
}
