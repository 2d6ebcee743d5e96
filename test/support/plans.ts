import pg from 'pg';
import type { QueryOptions, SqlDriver, SqlExecutor } from '../../engine/store/sql/driver.ts';

export interface Statement {
  text: string;
  params: unknown[];
}

/** A driver that passes every statement on to the real one and remembers those sent outside transactions. */
export class RecordingDriver implements SqlDriver {
  statements: Statement[] = [];

  constructor(private readonly inner: SqlDriver) {}

  get schema() {
    return this.inner.schema;
  }

  query<Row = Record<string, any>>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Row[]> {
    this.statements.push({ text, params });
    return this.inner.query<Row>(text, params, options);
  }

  exec(script: string) {
    return this.inner.exec(script);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: { closeAfter?: boolean }) {
    return this.inner.transaction(fn, options);
  }

  close() {
    return this.inner.close();
  }

  /** The statements `action` sends. */
  async during(action: () => Promise<unknown>): Promise<Statement[]> {
    const before = this.statements.length;
    await action();
    return this.statements.slice(before);
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/**
 * The tables a statement reads with a sequential scan, in the plan PostgreSQL makes for its values (custom) and
 * in the one it may keep for any values (generic): the store's driver prepares statements, so either may run.
 */
export async function sequentialScans(url: string, schema: string, statement: Statement): Promise<string[]> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(`prepare checked as ${statement.text}`);
    const scanned = new Set<string>();
    // EXECUTE takes its values as literals of unknown type, which PostgreSQL reads as the statement's types.
    const values = statement.params.map((value) => literal(client, value)).join(', ');
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await client.query(`set plan_cache_mode = ${mode}`);
      const [row] = (await client.query(`explain (format json) execute checked${values ? `(${values})` : ''}`)).rows;
      const visit = (node: PlanNode) => {
        if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) scanned.add(node['Relation Name']);
        for (const child of node.Plans ?? []) visit(child);
      };
      visit(row['QUERY PLAN'][0].Plan);
    }
    return [...scanned].sort();
  } finally {
    await client.end();
  }
}

/** A value as the driver would send it, written as a literal. */
function literal(client: pg.Client, value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value))
    return client.escapeLiteral(
      `{${value.map((item) => (item === null ? 'NULL' : `"${String(item).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`,
    );
  if (value instanceof Date) return client.escapeLiteral(value.toISOString());
  if (typeof value === 'object') return client.escapeLiteral(JSON.stringify(value));
  return client.escapeLiteral(String(value));
}
