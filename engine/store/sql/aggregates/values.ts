import type { SealedValue } from '../../../secrets/index.ts';
import type { PageRequest, PlatformScope, ValueStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { type Row, json, decodeCursor, page } from './rows.ts';
import { toVariable, toSecretInfo } from './row-mappers.ts';

/** Variables, sealed secrets, and the platform's values with their tenant overrides. */
export class SqlValues implements ValueStore {
  constructor(private readonly db: SqlDriver) {}

  async putPlatformValue({ tenantId }: PlatformScope, name: string, value: unknown) {
    const [row] =
      tenantId === null
        ? await this.db.query(
            `insert into platform_globals (name, value) values ($1, $2::jsonb)
         on conflict (name) do update set value = excluded.value, updated_at = now()
           returning *, (xmax = 0) as created`,
            [name, json(value)],
          )
        : await this.db.query(
            `insert into platform_tenant_globals (tenant_id, name, value) values ($1, $2, $3::jsonb)
         on conflict (tenant_id, name) do update set value = excluded.value, updated_at = now()
           returning *, (xmax = 0) as created`,
            [tenantId, name, json(value)],
          );
    return { variable: toVariable(row), created: row.created };
  }

  async getPlatformValue({ tenantId }: PlatformScope, name: string) {
    const [row] =
      tenantId === null
        ? await this.db.query('select * from platform_globals where name = $1', [name])
        : await this.db.query('select * from platform_tenant_globals where tenant_id = $1 and name = $2', [
            tenantId,
            name,
          ]);
    return row ? toVariable(row) : undefined;
  }

  async listPlatformValues({ tenantId }: PlatformScope, request: PageRequest) {
    const rows =
      tenantId === null
        ? await this.db.query(
            'select * from platform_globals where ($1::text is null or name > $1) order by name limit $2',
            [decodeCursor(request.after), request.first + 1],
          )
        : await this.db.query(
            'select * from platform_tenant_globals where tenant_id = $1 and ($2::text is null or name > $2) order by ' +
              'name limit $3',
            [tenantId, decodeCursor(request.after), request.first + 1],
          );
    return page(rows, request, toVariable, (r) => r.name);
  }

  async deletePlatformValue({ tenantId }: PlatformScope, name: string) {
    const rows =
      tenantId === null
        ? await this.db.query('delete from platform_globals where name = $1 returning name', [name])
        : await this.db.query('delete from platform_tenant_globals where tenant_id = $1 and name = $2 returning name', [
            tenantId,
            name,
          ]);
    return rows.length > 0;
  }

  async putVariable(tenantId: string, name: string, value: unknown) {
    const [row] = await this.db.query(
      `insert into variables (tenant_id, name, value) values ($1, $2, $3::jsonb)
       on conflict (tenant_id, name) do update set value = excluded.value, updated_at = now()
       returning *, (xmax = 0) as created`,
      [tenantId, name, json(value)],
    );
    return { variable: toVariable(row), created: row.created };
  }

  async getVariable(tenantId: string, name: string) {
    const [row] = await this.db.query('select * from variables where tenant_id = $1 and name = $2', [tenantId, name]);
    return row ? toVariable(row) : undefined;
  }

  async listVariables(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      'select * from variables where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3',
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toVariable, (r) => r.name);
  }

  async deleteVariable(tenantId: string, name: string) {
    return (
      (await this.db.query('delete from variables where tenant_id = $1 and name = $2 returning name', [tenantId, name]))
        .length > 0
    );
  }

  async putSecret(tenantId: string, name: string, sealed: SealedValue) {
    const [row] = await this.db.query(
      `insert into secrets (tenant_id, name, key_id, ciphertext, fingerprint) values ($1, $2, $3, $4, $5)
       on conflict (tenant_id, name) do update set key_id = excluded.key_id, ciphertext = excluded.ciphertext,
         fingerprint = excluded.fingerprint, updated_at = now()
       returning name, key_id, fingerprint, created_at, updated_at, (xmax = 0) as created`,
      [tenantId, name, sealed.keyId, sealed.ciphertext, sealed.fingerprint],
    );
    return { secret: toSecretInfo(row), created: row.created };
  }

  async listSecrets(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select name, key_id, fingerprint, created_at, updated_at from secrets
        where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toSecretInfo, (r) => r.name);
  }

  async deleteSecret(tenantId: string, name: string) {
    return (
      (await this.db.query('delete from secrets where tenant_id = $1 and name = $2 returning name', [tenantId, name]))
        .length > 0
    );
  }

  async sealedSecrets(tenantId: string, names: Iterable<string>) {
    const rows = await this.db.query<Row>(
      'select name, key_id, ciphertext, fingerprint from secrets where tenant_id = $1 and name = any($2::text[])',
      [tenantId, [...names]],
    );
    return rows.map((r) => ({ name: r.name, keyId: r.key_id, ciphertext: r.ciphertext, fingerprint: r.fingerprint }));
  }
}
