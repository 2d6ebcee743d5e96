// usage: tsx bench/scratch-sweep-intake.ts <db> <mode: sweep|intake> [emptyDb]
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { accepted, loadIntake } from './intake.ts';
import { isolation, start, stop } from './processes.ts';
const [db, mode] = process.argv.slice(2);
const url = (d: string) => `postgres://root@127.0.0.1:5432/${d}`;
async function api(d: string, schema: string) {
  return start(['--import', 'tsx', 'bench/child.ts', 'tributary'], { ...isolation(), DATABASE_URL: url(d), DATABASE_SCHEMA: schema });
}
if (mode === 'intake') {
  // interleaved: empty schema in db test, seeded db
  const c = new pg.Client({ connectionString: url('test') }); await c.connect();
  const empty = `e_${Date.now()}`; await c.query(`create schema ${empty}`);
  const a = await api('test', empty); const b = await api(db, 'h');
  for (let i = 0; i < 2; i++) for (const [name, p] of [['empty', a], ['seeded', b]] as const) {
    const f = accepted(await loadIntake(p.detail, p.child.pid));
    console.log(name, f.requestsPerSecond, 'req/s p99', f.p99Ms);
  }
  await stop(a.child); await stop(b.child); await c.query(`drop schema ${empty} cascade`); await c.end();
} else {
  const driver = new PgDriver({ connectionString: url(db), schema: 'h' });
  const store = await SqlStore.open(driver);
  const p = await api(db, 'h');
  const before = accepted(await loadIntake(p.detail, p.child.pid));
  let ms = 0; let report: unknown;
  const during = accepted(await loadIntake(p.detail, p.child.pid, async () => { const s = performance.now(); report = await store.pruneExpired(Date.now() + Number(process.argv[4] ?? 0) * 86_400_000); ms = performance.now() - s; }));
  console.log(JSON.stringify({ before: [before.requestsPerSecond, before.p99Ms], during: [during.requestsPerSecond, during.p99Ms], ratio: during.p99Ms / before.p99Ms, sweepMs: Math.round(ms), report }));
  await stop(p.child); await store.close();
}
process.exit(0);
