import type { SqlDriver } from './driver.ts';
import type { Migration } from './migrations/migration.ts';
import { migration as m1 } from './migrations/01-flow-runtime.ts';
import { migration as m2 } from './migrations/02-destinations.ts';
import { migration as m3 } from './migrations/03-batches-and-incremental-fields.ts';
import { migration as m4 } from './migrations/04-tenant-suspension-message-topics-blocked-topics.ts';
import { migration as m5 } from './migrations/05-user-settings.ts';
import { migration as m6 } from './migrations/06-platform-values.ts';
import { migration as m7 } from './migrations/07-data-spaces.ts';
import { migration as m8 } from './migrations/08-run-logs.ts';
import { migration as m9 } from './migrations/09-tenant-actions.ts';
import { migration as m10 } from './migrations/10-unfinished-runs.ts';
import { migration as m11 } from './migrations/11-tenant-limits.ts';
import { migration as m12 } from './migrations/12-tenant-state-limits.ts';
import { migration as m13 } from './migrations/13-called-runs.ts';
import { migration as m14 } from './migrations/14-replays.ts';
import { migration as m15 } from './migrations/15-message-traces.ts';
import { migration as m16 } from './migrations/16-held-runs.ts';
import { migration as m17 } from './migrations/17-alerts.ts';
import { migration as m18 } from './migrations/18-batch-replays.ts';
import { migration as m19 } from './migrations/19-rollups.ts';
import { migration as m20 } from './migrations/20-retention.ts';
import { migration as m21 } from './migrations/21-messages-by-status.ts';
import { migration as m22 } from './migrations/22-daily-rollups.ts';
import { migration as m23 } from './migrations/23-expression-names.ts';
import { migration as m24 } from './migrations/24-replay-redo.ts';
import { migration as m25 } from './migrations/25-runs-by-error-kind.ts';
import { migration as m26 } from './migrations/26-flow-control.ts';
import { migration as m27 } from './migrations/27-environments.ts';
import { migration as m28 } from './migrations/28-step-exchanges.ts';
import { migration as m29 } from './migrations/29-run-status-statistics.ts';
import { migration as m30 } from './migrations/30-cheaper-rollups.ts';
import { migration as m31 } from './migrations/31-run-placements.ts';

/** Versioned, append-only (one file each in migrations/): a released migration never changes; a change is a new one. */
export const migrations: Migration[] = [
  m1,
  m2,
  m3,
  m4,
  m5,
  m6,
  m7,
  m8,
  m9,
  m10,
  m11,
  m12,
  m13,
  m14,
  m15,
  m16,
  m17,
  m18,
  m19,
  m20,
  m21,
  m22,
  m23,
  m24,
  m25,
  m26,
  m27,
  m28,
  m29,
  m30,
  m31,
];

/**
 * Apply pending migrations in one transaction: all or none. The advisory lock makes concurrent
 * starters (several API and worker processes) take turns; on PGlite there is only one. `upToVersion` stops
 * short of the latest (an upgrade done in steps, or rehearsed).
 */
export async function migrate(driver: SqlDriver, upToVersion = Number.POSITIVE_INFINITY): Promise<number[]> {
  return driver.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7263541)');
    if (driver.schema) await tx.exec(`create schema if not exists ${driver.schema}`);
    await tx.query(`create table if not exists schema_migrations (
      version integer primary key, name text not null, applied_at timestamptz not null default now())`);
    const done = new Set(
      (await tx.query<{ version: number }>('select version from schema_migrations')).map((row) => row.version),
    );
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version) || migration.version > upToVersion) continue;
      await tx.exec(migration.sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    return applied;
  });
}
