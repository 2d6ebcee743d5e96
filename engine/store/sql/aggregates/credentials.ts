import type { Client, SigningKey, CredentialStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { type Row, iso, json } from './rows.ts';
import { toClient } from './row-mappers.ts';

/** API clients and the embedded issuer's signing keys. */
export class SqlCredentials implements CredentialStore {
  constructor(private readonly db: SqlDriver) {}

  async createClient(client: Omit<Client, 'createdAt'>) {
    const [row] = await this.db.query(
      `insert into clients (client_id, tenant_id, secret_hash, scopes, operator, environments)
       values ($1, $2, $3, $4::jsonb, $5, $6::jsonb) returning *`,
      [
        client.clientId,
        client.tenantId,
        client.secretHash,
        json(client.scopes),
        client.operator,
        client.environments && json(client.environments),
      ],
    );
    return toClient(row);
  }

  async getClient(clientId: string) {
    const [row] = await this.db.query('select * from clients where client_id = $1', [clientId]);
    return row ? toClient(row) : undefined;
  }

  async listClients(filter: { tenantId?: string }) {
    const rows = await this.db.query(
      'select * from clients where ($1::text is null or tenant_id = $1) order by created_at, client_id',
      [filter.tenantId ?? null],
    );
    return rows.map(toClient);
  }

  async deleteClient(clientId: string) {
    const rows = await this.db.query('delete from clients where client_id = $1 returning client_id', [clientId]);
    return rows.length > 0;
  }

  async listSigningKeys(): Promise<SigningKey[]> {
    const rows = await this.db.query('select * from signing_keys order by created_at desc');
    return rows.map((r: Row) => ({
      kid: r.kid,
      sealedPrivateJwk: r.sealed_private_jwk,
      publicJwk: r.public_jwk,
      createdAt: iso(r.created_at),
    }));
  }

  async addSigningKey(key: Omit<SigningKey, 'createdAt'>) {
    await this.db.query(
      'insert into signing_keys (kid, sealed_private_jwk, public_jwk) values ($1, $2::jsonb, $3::jsonb) on conflict ' +
        'do nothing',
      [key.kid, json(key.sealedPrivateJwk), json(key.publicJwk)],
    );
  }
}
