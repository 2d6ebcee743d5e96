import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PlanAging, StatementError, type SqlDriver } from '../engine/store/sql/driver.ts';
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

// One connection: the prepared statements and the plan_cache_mode observed are the ones the reads used.
const oneSession: Array<[string, () => Promise<SqlDriver>]> = [
  ['PGlite', () => PgliteDriver.open()],
  ['PostgreSQL', async () => new PgDriver({ connectionString: POSTGRES_URL, maxConnections: 1 })],
];

describe.each(oneSession)('a read of partitioned history on %s', (_name, open) => {
  it('is planned once for any values when it asks for a generic plan, and for each call’s values otherwise', async () => {
    const driver = await open();
    const table = `weeks_${randomBytes(4).toString('hex')}`;
    const plans = async (text: string) =>
      (
        await driver.query<{ generic: string; custom: string }>(
          `select generic_plans::text as generic, custom_plans::text as custom from pg_prepared_statements where statement = $1`,
          [text],
        )
      )[0];
    try {
      await driver.exec(`create table ${table} (id int not null) partition by range (id);
        create table ${table}_1 partition of ${table} for values from (0) to (10);
        create table ${table}_2 partition of ${table} for values from (10) to (20)`);
      const read = `select count(*) as n from ${table} where id >= $1`;
      for (const from of [0, 5, 15]) await driver.query(read, [from], { plan: 'generic' });
      expect(await plans(read)).toEqual({ generic: '3', custom: '0' });
      // The same statement asked without: planned for each call's values again.
      for (const from of [0, 5]) await driver.query(read, [from]);
      expect(await plans(read)).toMatchObject({ custom: '2' });
      // A transaction after a generic read: its statements planned for their values too.
      await driver.query(read, [0], { plan: 'generic' });
      await driver.transaction((tx) => tx.query(read, [5]));
      expect(await plans(read)).toEqual({ generic: '4', custom: '3' });
    } finally {
      await driver.exec(`drop table if exists ${table}`);
      await driver.close();
    }
  });
});

describe("a session's cached plans", () => {
  it('are dropped as old as the driver was when they were made, from a second to ten', () => {
    const aging = new PlanAging(0);
    const droppedAfter = (madeAt: number) => {
      let ms = 0;
      while (!aging.stale(madeAt, madeAt + ms)) ms += 100;
      return ms;
    };
    // Made as the driver opened, when the tables are emptiest: kept a second; then two, four, eight, and ten at most.
    expect([0, 1_000, 2_000, 4_000, 8_000, 18_000, 3_600_000].map(droppedAfter)).toEqual([
      1_000, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
  });
});
