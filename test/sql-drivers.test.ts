import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StatementError, type SqlDriver } from '../engine/store/sql/driver.ts';
import { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { PgliteDriver } from '../engine/store/sql/pglite-driver.ts';
import { POSTGRES_URL } from './support/harness.ts';

const drivers: Array<[string, () => Promise<SqlDriver>]> = [
  ['PGlite', () => PgliteDriver.open()],
  ['PostgreSQL', async () => new PgDriver({ connectionString: POSTGRES_URL })],
];

const SECRET = 'card-4111-1111-1111-1111';

describe.each(drivers)('a statement %s refuses', (_name, open) => {
  it('is told by its table, code and constraint, never by the values it was sent or the row it met', async () => {
    const driver = await open();
    const table = `refusal_${randomBytes(4).toString('hex')}`;
    try {
      await driver.exec(`create table ${table} (id text primary key, body text not null)`);
      await driver.query(`insert into ${table} (id, body) values ($1, $2)`, [SECRET, SECRET]);
      const refusals = await Promise.all(
        [
          driver.query(`insert into ${table} (id, body) values ($1, $2)`, [SECRET, SECRET]),
          driver.query(`insert into ${table} (id, body) values ($1, null)`, [`${SECRET}-2`]),
          driver.query('select $1::uuid as id', [SECRET]),
          driver.query('select $1::integer as n', ['99999999999999999999']),
        ].map((statement) =>
          statement.then(
            () => undefined,
            (error: unknown) => error,
          ),
        ),
      );
      expect(refusals[0]).toMatchObject({
        statement: `insert into ${table}`,
        code: '23505',
        constraint: `${table}_pkey`,
      });
      expect(refusals[1]).toMatchObject({ code: '23502' });
      expect(refusals[2]).toMatchObject({ statement: 'select', code: '22P02' });
      expect(refusals[3]).toMatchObject({ code: '22003' });
      for (const refusal of refusals) {
        expect(refusal).toBeInstanceOf(StatementError);
        // What pino writes of the error: every field it has.
        const logged = JSON.stringify(pino.stdSerializers.err(refusal as Error));
        expect(logged).not.toContain(SECRET);
        expect(logged).not.toContain('99999999999999999999');
      }
    } finally {
      await driver.exec(`drop table if exists ${table}`);
      await driver.close();
    }
  });
});
