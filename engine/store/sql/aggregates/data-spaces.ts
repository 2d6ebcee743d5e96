import type { PageRequest, DataSpaceStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { decodeCursor, page, DATA_SPACES } from './rows.ts';
import { toDataSpace, toDataDocument } from './row-mappers.ts';

/** Data spaces and their documents. */
export class SqlDataSpaces implements DataSpaceStore {
  constructor(private readonly db: SqlDriver) {}

  async putDataSpace(tenantId: string, name: string, description: string | null) {
    const [row] = await this.db.query(
      `insert into data_spaces (tenant_id, name, description) values ($1, $2, $3)
       on conflict (tenant_id, name) do update set description = excluded.description
         returning *, (xmax = 0) as created`,
      [tenantId, name, description],
    );
    return {
      space: toDataSpace({ ...row, documents: row.created ? 0 : await this.countDocuments(tenantId, name) }),
      created: row.created,
    };
  }

  private async countDocuments(tenantId: string, space: string) {
    const [row] = await this.db.query('select count(*) as n from data_documents where tenant_id = $1 and space = $2', [
      tenantId,
      space,
    ]);
    return Number(row.n);
  }

  async getDataSpace(tenantId: string, name: string) {
    const [row] = await this.db.query(`${DATA_SPACES} where s.tenant_id = $1 and s.name = $2`, [tenantId, name]);
    return row ? toDataSpace(row) : undefined;
  }

  async listDataSpaces(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `${DATA_SPACES} where s.tenant_id = $1 and ($2::text is null or s.name > $2) order by s.name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toDataSpace, (r) => r.name);
  }

  async deleteDataSpace(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from data_spaces where tenant_id = $1 and name = $2 returning name', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }

  async putDocuments(tenantId: string, space: string, documents: Array<{ key: string; value: unknown }>) {
    const [row] = await this.db.query(
      `with s as (select name from data_spaces where tenant_id = $1 and name = $2),
       written as (
         insert into data_documents (tenant_id, space, key, value)
         select $1, s.name, d.key, d.value from jsonb_to_recordset($3::jsonb) as d(key text, value jsonb) cross join s
         on conflict (tenant_id, space, key) do update set value = excluded.value, updated_at = now()
         returning (xmax = 0) as created)
       select exists (select 1 from s) as found, count(*) filter (where created) as created, count(*) filter (where not
         created) as updated from written`,
      [tenantId, space, JSON.stringify(documents.map(({ key, value }) => ({ key, value: value ?? null })))],
    );
    return row.found ? { created: Number(row.created), updated: Number(row.updated) } : undefined;
  }

  async getDocument(tenantId: string, space: string, key: string) {
    const [row] = await this.db.query('select * from data_documents where tenant_id = $1 and space = $2 and key = $3', [
      tenantId,
      space,
      key,
    ]);
    return row ? toDataDocument(row) : undefined;
  }

  async listDocuments(tenantId: string, space: string, filter: { prefix?: string }, request: PageRequest) {
    const rows = await this.db.query(
      `select * from data_documents where tenant_id = $1 and space = $2 and ($3::text is null or starts_with(key, $3))
         and ($4::text is null or key > $4) order by key limit $5`,
      [tenantId, space, filter.prefix ?? null, decodeCursor(request.after, /^[\s\S]{1,512}$/), request.first + 1],
    );
    return page(rows, request, toDataDocument, (r) => r.key);
  }

  async deleteDocument(tenantId: string, space: string, key: string) {
    return (
      (
        await this.db.query(
          'delete from data_documents where tenant_id = $1 and space = $2 and key = $3 returning key',
          [tenantId, space, key],
        )
      ).length > 0
    );
  }
}
