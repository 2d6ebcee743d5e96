import type { SealedValue } from '../../../secrets/index.ts';
import type { PageRequest, NewDestination, DestinationStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { json, decodeCursor, page } from './rows.ts';
import { toDestination } from './row-mappers.ts';

/** Destinations: settings in the clear, credentials sealed. */
export class SqlDestinations implements DestinationStore {
  constructor(private readonly db: SqlDriver) {}

  async putDestination(tenantId: string, destination: NewDestination) {
    const [row] = await this.db.query(
      `insert into destinations (tenant_id, name, type, settings, credentials_set, sealed_credentials)
        values ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb)
       on conflict (tenant_id, name) do update set type = excluded.type, settings = excluded.settings, credentials_set
         = excluded.credentials_set,
         sealed_credentials = excluded.sealed_credentials, updated_at = now()
       returning name, type, settings, credentials_set, created_at, updated_at, (xmax = 0) as created`,
      [
        tenantId,
        destination.name,
        destination.type,
        json(destination.settings),
        json(destination.credentialsSet),
        json(destination.sealedCredentials),
      ],
    );
    return { destination: toDestination(row), created: row.created };
  }

  async getDestination(tenantId: string, name: string) {
    const [row] = await this.db.query(
      'select name, type, settings, credentials_set, created_at, updated_at from destinations where tenant_id = $1 ' +
        'and name = $2',
      [tenantId, name],
    );
    return row ? toDestination(row) : undefined;
  }

  async getSealedDestination(tenantId: string, name: string) {
    const [row] = await this.db.query(
      'select name, type, settings, credentials_set, sealed_credentials, created_at, updated_at from destinations ' +
        'where tenant_id = $1 and name = $2',
      [tenantId, name],
    );
    return row
      ? { destination: toDestination(row), sealedCredentials: row.sealed_credentials as SealedValue }
      : undefined;
  }

  async listDestinations(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select name, type, settings, credentials_set, created_at, updated_at from destinations
        where tenant_id = $1 and ($2::text is null or name > $2) order by name limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toDestination, (r) => r.name);
  }

  async deleteDestination(tenantId: string, name: string) {
    return (
      (
        await this.db.query('delete from destinations where tenant_id = $1 and name = $2 returning name', [
          tenantId,
          name,
        ])
      ).length > 0
    );
  }
}
