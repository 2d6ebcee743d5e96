import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgliteDriver } from '../engine/store/sql/pglite-driver.ts';

let driver: PgliteDriver;
beforeAll(async () => {
  driver = await PgliteDriver.open();
});
afterAll(() => driver?.close());

/** Start statements in order; resolve with the order in which they finished. */
async function finishingOrder(statements: Array<[label: string, run: () => Promise<unknown>]>) {
  const finished: string[] = [];
  await Promise.all(statements.map(([label, run]) => run().then(() => finished.push(label))));
  return finished;
}

describe('PGlite in its thread, in lanes', () => {
  it('serves a waiting request before queued background work', async () => {
    const background = driver.background();
    const slow = (label: string) =>
      [label, () => background.query('select pg_sleep(0.02)')] as [string, () => Promise<unknown>];
    const order = await finishingOrder([
      slow('b1'),
      slow('b2'),
      slow('b3'),
      slow('b4'),
      ['request', () => driver.query('select 1')],
    ]);
    expect(order.indexOf('request')).toBe(1);
  });

  it('still gives background work a turn while requests keep coming', async () => {
    const requests = Array.from(
      { length: 12 },
      (_, i) => [`r${i}`, () => driver.query('select pg_sleep(0.005)')] as [string, () => Promise<unknown>],
    );
    const order = await finishingOrder([
      requests[0],
      ['job', () => driver.background().query('select 1')],
      ...requests.slice(1),
    ]);
    expect(order.indexOf('job')).toBeLessThanOrEqual(5);
  });

  it('makes statements with large values wait apart: answers first, then turns with background work by time', async () => {
    // A statement with a large value, taking 60 ms: heavy, in whatever lane it is sent.
    const heavy = (label: string) =>
      [label, () => driver.query('select pg_sleep(0.06)', [], { large: true })] as [string, () => Promise<unknown>];
    const job = (label: string) =>
      [label, () => driver.background().query('select pg_sleep(0.04)')] as [string, () => Promise<unknown>];
    const order = await finishingOrder([
      ['first', () => driver.query('select pg_sleep(0.02)')],
      heavy('h1'),
      heavy('h2'),
      job('b1'),
      job('b2'),
      job('b3'),
      job('b4'),
      ['request', () => driver.query('select 1')],
    ]);
    // The request goes before everything queued; heavy statements get the thread's time in equal share
    // with background work (one of 60 ms, then two of 40 ms: 20 ms either side of even), not every turn.
    expect(order).toEqual(['first', 'request', 'h1', 'b1', 'b2', 'h2', 'b3', 'b4']);
  });

  it("keeps PostgreSQL's error fields and transaction semantics across the database's thread", async () => {
    await driver.exec('create table thread_check (id int primary key)');
    await driver.query('insert into thread_check values ($1)', [1]);
    const duplicate = await driver.query('insert into thread_check values (1)').catch((error: unknown) => error);
    expect(duplicate).toMatchObject({ code: '23505', constraint: 'thread_check_pkey' });
    await expect(
      driver.transaction(async (tx) => {
        await tx.query('insert into thread_check values (2)');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await driver.transaction((tx) => tx.query('insert into thread_check values (3) returning id'))).toEqual([
      { id: 3 },
    ]);
    expect(await driver.query('select id from thread_check order by id')).toEqual([{ id: 1 }, { id: 3 }]);
  });

  it('fails statements once its thread is gone, instead of leaving them waiting', async () => {
    const closed = await PgliteDriver.open();
    await closed.close();
    await expect(closed.query('select 1')).rejects.toThrow(/thread exited/);
  });

  it('closing the background view leaves the database open', async () => {
    await driver.background().close();
    expect(await driver.query<{ n: number }>('select 1 as n')).toEqual([{ n: 1 }]);
  });
});
