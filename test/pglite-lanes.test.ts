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

describe('PGlite lanes', () => {
  it('serves a waiting request before queued background work', async () => {
    const background = driver.background();
    const slow = (label: string) => [label, () => background.query('select pg_sleep(0.02)')] as [string, () => Promise<unknown>];
    const order = await finishingOrder([slow('b1'), slow('b2'), slow('b3'), slow('b4'), ['request', () => driver.query('select 1')]]);
    expect(order.indexOf('request')).toBe(1);
  });

  it('still gives background work a turn while requests keep coming', async () => {
    const requests = Array.from({ length: 12 }, (_, i) => [`r${i}`, () => driver.query('select pg_sleep(0.005)')] as [string, () => Promise<unknown>]);
    const order = await finishingOrder([requests[0], ['job', () => driver.background().query('select 1')], ...requests.slice(1)]);
    expect(order.indexOf('job')).toBeLessThanOrEqual(5);
  });

  it('closing the background view leaves the database open', async () => {
    await driver.background().close();
    expect(await driver.query<{ n: number }>('select 1 as n')).toEqual([{ n: 1 }]);
  });
});
