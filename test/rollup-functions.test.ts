import { describe, expect, it } from 'vitest';
import type { SqlDriver } from '../engine/store/sql/driver.ts';
import { migrate } from '../engine/store/sql/migrations.ts';
import { PgliteDriver } from '../engine/store/sql/pglite-driver.ts';
import { schemaAtVersion } from './support/stores.ts';

type Histogram = Array<number | null> | null;

/** A deterministic pseudo-random sequence (a test that fails says the same thing each time). */
function numbers(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % below;
  };
}

/** Histograms as the rollups build them (distinct buckets, any order) and as a careless caller might: with nulls. */
function inputs() {
  const next = numbers(7);
  const histograms: Array<[buckets: Array<number | null> | null, counts: Array<number | null> | null]> = [
    [null, null],
    [[], []],
    [[0], [7]],
    [[null], [3]],
    [
      [5, null, 2],
      [1, 4, null],
    ],
  ];
  const sums: Array<[Histogram, Histogram]> = [
    [null, null],
    [[], []],
    [null, [1, 2]],
    [[3], []],
    [
      [1, null, 3],
      [null, 5],
    ],
  ];
  for (let i = 0; i < 40; i++) {
    const buckets = [...new Set(Array.from({ length: 1 + next(12) }, () => next(400)))];
    histograms.push([buckets, buckets.map(() => 1 + next(1000))]);
    sums.push([Array.from({ length: next(120) }, () => next(50)), Array.from({ length: next(120) }, () => next(50))]);
  }
  return { histograms, sums };
}

/** What histogram() and add_histograms() of the store answer for every input. */
async function answers(driver: SqlDriver) {
  const { histograms, sums } = inputs();
  // An array of the JSON at `path` (an array, or null), of `type`: its nulls kept, and empty when it is empty.
  const array = (path: string, type: string) =>
    `case when jsonb_typeof(${path}) = 'array' then array(select e::${type} from jsonb_array_elements_text(${path})
       with ordinality as a (e, n) order by n) end`;
  const [row] = await driver.query<{ histograms: Histogram[]; sums: Histogram[] }>(
    `select (select array_agg(to_jsonb(histogram(${array('h -> 0', 'int')}, ${array('h -> 1', 'bigint')})) order by i)
               from jsonb_array_elements($1::jsonb) with ordinality as x (h, i)) as histograms,
            (select array_agg(to_jsonb(add_histograms(${array('s -> 0', 'bigint')}, ${array('s -> 1', 'bigint')}))
               order by i)
               from jsonb_array_elements($2::jsonb) with ordinality as x (s, i)) as sums`,
    [JSON.stringify(histograms), JSON.stringify(sums)],
  );
  return row;
}

const drivers: Array<[string, () => Promise<{ driver: SqlDriver; drop: () => Promise<void> }>]> = [
  [
    'PGlite',
    async () => {
      const driver = await PgliteDriver.open();
      return { driver, drop: () => driver.close() };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const { driver, drop } = await schemaAtVersion('rollup_functions', 29);
      return {
        driver,
        drop: async () => {
          await driver.close();
          await drop();
        },
      };
    },
  ],
];

describe.each(drivers)('the histograms of the rollups on %s', (_name, open) => {
  it('are built and added in PL/pgSQL as migration 22 built and added them in SQL', async () => {
    const { driver, drop } = await open();
    try {
      await migrate(driver, 29);
      const before = await answers(driver);
      // Not a test of nothing: the inputs give histograms of many buckets, and nulls where nothing was counted.
      expect(before.histograms.filter((histogram) => (histogram?.length ?? 0) > 100).length).toBeGreaterThan(20);
      expect(before.sums).toContainEqual(null);
      await migrate(driver);
      const languages = await driver.query<{ name: string; language: string }>(
        `select p.proname as name, l.lanname as language from pg_proc p join pg_language l on l.oid = p.prolang
          where p.proname in ('histogram', 'add_histograms') and pg_function_is_visible(p.oid) order by 1`,
      );
      expect(languages).toEqual([
        { name: 'add_histograms', language: 'plpgsql' },
        { name: 'histogram', language: 'plpgsql' },
      ]);
      expect(await answers(driver)).toEqual(before);
    } finally {
      await drop();
    }
  });
});
