import type { Store } from '../port.ts';
import { SqlActions } from './aggregates/actions.ts';
import { SqlAlerts } from './aggregates/alerts.ts';
import { SqlBatches } from './aggregates/batches.ts';
import { SqlCredentials } from './aggregates/credentials.ts';
import { SqlDataSpaces } from './aggregates/data-spaces.ts';
import { SqlDestinations } from './aggregates/destinations.ts';
import { SqlFlows } from './aggregates/flows.ts';
import { SqlLogs } from './aggregates/logs.ts';
import { SqlMessages } from './aggregates/messages.ts';
import { SqlReplays } from './aggregates/replays.ts';
import { PARTITIONS_AHEAD_MS, SqlRetention } from './aggregates/retention.ts';
import { SqlRuns } from './aggregates/runs.ts';
import { SqlStatistics } from './aggregates/statistics.ts';
import { SqlTenants } from './aggregates/tenants.ts';
import { SqlValues } from './aggregates/values.ts';
import type { SqlDriver } from './driver.ts';
import { migrate } from './migrations.ts';

/** A day's partitions made behind too, for a clock that lags. */
const PARTITIONS_BEHIND_MS = 86_400_000;

/** The class is completed at construction by the aggregates' methods: this merged interface says so. */
export interface SqlStore extends Store {}

/**
 * The store on PostgreSQL's dialect (the same SQL runs on PGlite and on a PostgreSQL server), one
 * module per aggregate in aggregates/, each implementing its slice of the port.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor adopts the aggregates' methods
export class SqlStore {
  constructor(private readonly db: SqlDriver) {
    const aggregates = [
      new SqlTenants(db),
      new SqlCredentials(db),
      new SqlFlows(db),
      new SqlValues(db),
      new SqlDestinations(db),
      new SqlMessages(db),
      new SqlRuns(db),
      new SqlBatches(db),
      new SqlStatistics(db),
      new SqlDataSpaces(db),
      new SqlLogs(db),
      new SqlActions(db),
      new SqlReplays(db),
      new SqlAlerts(db),
      new SqlRetention(db),
    ];
    for (const aggregate of aggregates) adopt(this, aggregate);
  }

  /** Migrated, with partitions for the rows of the days just past and of the week ahead. */
  static async open(db: SqlDriver): Promise<SqlStore> {
    await migrate(db);
    const store = new SqlStore(db);
    await store.preparePartitions(Date.now() - PARTITIONS_BEHIND_MS, Date.now() + PARTITIONS_AHEAD_MS);
    return store;
  }

  async ping() {
    await this.db.query('select 1');
  }

  close() {
    return this.db.close();
  }
}

/** Gives `target` each method of `aggregate`, bound to it. */
function adopt(target: object, aggregate: object) {
  const prototype = Object.getPrototypeOf(aggregate) as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const member = prototype[name];
    if (name !== 'constructor' && typeof member === 'function') {
      Object.defineProperty(target, name, { value: member.bind(aggregate), writable: false, enumerable: false });
    }
  }
}
