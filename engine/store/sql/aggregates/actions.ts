import type { PageRequest, TenantAction, ActionStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { json, decodeCursor, page, isUniqueViolation } from './rows.ts';
import { toTenantAction } from './row-mappers.ts';

/** Tenants' low-code actions, versioned. */
export class SqlActions implements ActionStore {
  constructor(private readonly db: SqlDriver) {}

  async putAction(
    tenantId: string,
    action: Pick<TenantAction, 'name' | 'description' | 'expression' | 'inputSchema' | 'outputSchema'>,
  ) {
    // The primary key settles a race between two saves: the loser gets a unique violation and tries the next number.
    for (;;) {
      try {
        const [row] = await this.db.query(
          `insert into actions (tenant_id, name, version, description, expression, input_schema, output_schema)
           select $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5::jsonb, $6::jsonb from actions where tenant_id = $1
             and name = $2
           returning *`,
          [
            tenantId,
            action.name,
            action.description,
            action.expression,
            json(action.inputSchema),
            json(action.outputSchema),
          ],
        );
        return toTenantAction(row);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
  }

  async getAction(tenantId: string, name: string, version?: number) {
    const [row] = await this.db.query(
      'select * from actions where tenant_id = $1 and name = $2 and ($3::integer is null or version = $3) order by ' +
        'version desc limit 1',
      [tenantId, name, version ?? null],
    );
    return row ? toTenantAction(row) : undefined;
  }

  async listActions(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select distinct on (name) * from actions where tenant_id = $1 and ($2::text is null or name > $2)
        order by name, version desc limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toTenantAction, (r) => r.name);
  }

  async listActionVersions(tenantId: string, name: string, request: PageRequest) {
    const after = decodeCursor(request.after, /^\d{1,9}$/);
    const rows = await this.db.query(
      'select * from actions where tenant_id = $1 and name = $2 and ($3::integer is null or version < $3::integer) ' +
        'order by version desc limit $4',
      [tenantId, name, after === null ? null : Number(after), request.first + 1],
    );
    return page(rows, request, toTenantAction, (r) => String(r.version));
  }

  async deleteAction(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from actions where tenant_id = $1 and name = $2 returning version', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }
}
