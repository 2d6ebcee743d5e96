import { LimitReachedError } from '../../model/index.ts';
/** The little a SQL adapter needs from a PostgreSQL-compatible connection. */
export interface QueryOptions {
  /**
   * The statement carries a large value (a body over LARGE_JSON_LENGTH): a driver that executes one
   * statement at a time schedules it apart, so that it holds up no small one (see PgliteDriver).
   */
  large?: boolean;
  /**
   * 'generic': planned once for any values (PostgreSQL's generic plan, which prunes partitions as it runs) rather
   * than for each call's. For a read of the partitioned history whose best plan does not depend on its values:
   * planning it over every week's partitions costs more than running it (decision 24). A statement with
   * `$n is null or ...` conditions is not one: its generic plan cannot use them to bound an index.
   */
  plan?: 'generic';
}

export interface SqlExecutor {
  // biome-ignore lint/suspicious/noExplicitAny: a row's columns are typed by the mapper that reads them
  query<Row = Record<string, any>>(text: string, params?: unknown[], options?: QueryOptions): Promise<Row[]>;
  /** Runs a script of several statements, without parameters (migrations). */
  exec(script: string): Promise<void>;
}

export interface SqlDriver extends SqlExecutor {
  /** The schema every statement works in, when not the default one; migrations create it. */
  readonly schema?: string;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. `closeAfter` closes its
   * connection, where there are several, instead of keeping it for later statements (see SqlRetention.ddl).
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: { closeAfter?: boolean }): Promise<T>;
  close(): Promise<void>;
}

/** A session's cached plans are dropped at least this often (PlanAging)... */
const PLAN_REFRESH_MS = 10_000;
/** ...and its first ones after this long. */
const FIRST_PLAN_REFRESH_MS = 1_000;

/**
 * When a session drops its cached plans. A prepared statement keeps its generic plan until the statistics of its
 * tables change, and without new ones (autovacuum off or not yet round, PGlite's none) a plan made while they were
 * nearly empty is kept as they grow: a lookup of one run by its key, or of a run's steps, goes on scanning all of
 * them. Plans are dropped every PLAN_REFRESH_MS, and sooner while the driver is young, since a store's tables are
 * emptiest then: once as old as the driver was when they were made, from FIRST_PLAN_REFRESH_MS on. A worker that
 * started on a new store kept, for its first 10 s, a plan scanning the week's steps for each run it began (perf:
 * half of PostgreSQL's CPU in the engine bench, in some runs).
 */
export class PlanAging {
  constructor(private readonly openedAt = Date.now()) {}

  /** Whether plans made at `madeAt` are to be dropped at `now`. */
  stale(madeAt: number, now: number): boolean {
    return now - madeAt >= Math.min(PLAN_REFRESH_MS, Math.max(FIRST_PLAN_REFRESH_MS, madeAt - this.openedAt));
  }
}

/** Schema names come from configuration, never from requests; still, only plain identifiers pass. */
export function assertIdentifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a valid schema name: ${name}`);
  return name;
}

/**
 * A statement the database refused, told by what it is (its verb and table), PostgreSQL's code and
 * the names involved: never the values it was sent, nor the row it met (PostgreSQL's `detail` and
 * quoted values can hold webhook bodies and variable values, which must not reach a log).
 */
export class StatementError extends Error {
  override readonly name = 'StatementError';
  readonly constraint?: string;
  readonly table?: string;
  readonly column?: string;

  constructor(
    readonly statement: string,
    /** SQLSTATE, e.g. 23505 for a unique violation. */
    readonly code: string,
    names: { constraint?: string; table?: string; column?: string },
    reason: string,
  ) {
    super(`${statement}: ${reason} (SQLSTATE ${code}${names.constraint ? `, constraint ${names.constraint}` : ''})`);
    Object.assign(this, names);
  }
}

/** The database's refusal as a StatementError; any other failure (a lost connection) as it is. */
export function refusedStatement(error: unknown, text: string): unknown {
  const fields = error as { code?: unknown; message?: unknown; constraint?: string; table?: string; column?: string };
  if (typeof fields?.code !== 'string' || !/^[0-9A-Z]{5}$/.test(fields.code)) return error;
  // Raised by track_tenant_usage (migration 12), with the kind as its table.
  if (fields.code === 'TQ001') return new LimitReachedError(fields.table ?? 'state', String(fields.message));
  const reason = String(fields.message ?? 'refused').replace(/"[^"]*"/g, '"…"');
  return new StatementError(
    statementLabel(text),
    fields.code,
    { constraint: fields.constraint, table: fields.table, column: fields.column },
    reason,
  );
}

/** "insert into runs", "select from messages": enough to find the statement in the code. */
function statementLabel(text: string): string {
  const verb = /\b(insert into|update|delete from|select)\b/i.exec(text)?.[1]?.toLowerCase() ?? 'statement';
  const table =
    verb === 'select' ? /\bfrom\s+([\w.]+)/i.exec(text)?.[1] : new RegExp(`${verb}\\s+([\\w.]+)`, 'i').exec(text)?.[1];
  return table ? `${verb === 'select' ? 'select from' : verb} ${table}` : verb;
}
