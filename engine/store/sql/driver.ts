/** The little a SQL adapter needs from a PostgreSQL-compatible connection. */
export interface SqlExecutor {
  query<Row = Record<string, any>>(text: string, params?: unknown[]): Promise<Row[]>;
  /** Runs a script of several statements, without parameters (migrations). */
  exec(script: string): Promise<void>;
}

export interface SqlDriver extends SqlExecutor {
  /** The schema every statement works in, when not the default one; migrations create it. */
  readonly schema?: string;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Schema names come from configuration, never from requests; still, only plain identifiers pass. */
export function assertIdentifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a valid schema name: ${name}`);
  return name;
}
