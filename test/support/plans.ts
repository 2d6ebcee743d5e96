import pg from 'pg';
import type { QueryOptions, SqlDriver, SqlExecutor } from '../../engine/store/sql/driver.ts';

export interface Statement {
  text: string;
  params: unknown[];
  /** Planned once for any values (QueryOptions.plan 'generic'), else for each call's. */
  generic?: boolean;
}

/** A driver that passes every statement on to the real one and remembers those sent outside transactions. */
export class RecordingDriver implements SqlDriver {
  statements: Statement[] = [];

  constructor(private readonly inner: SqlDriver) {}

  get schema() {
    return this.inner.schema;
  }

  query<Row = Record<string, any>>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Row[]> {
    this.statements.push({ text, params, generic: options?.plan === 'generic' });
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
  'Index Name'?: string;
  'Actual Total Time'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Calls `explain` with the EXPLAIN of `statement` (prepared in `schema`, as the store's driver prepares it). */
async function explaining<T>(
  url: string,
  schema: string,
  statement: Statement,
  explain: (plan: (mode: string, options: string) => Promise<PlanNode>) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema} -c jit=off` });
  await client.connect();
  try {
    await client.query(`prepare checked as ${statement.text}`);
    // EXECUTE takes its values as literals of unknown type, which PostgreSQL reads as the statement's types.
    const values = statement.params.map((value) => literal(client, value)).join(', ');
    return await explain(async (mode, options) => {
      await client.query(`set plan_cache_mode = ${mode}`);
      const [row] = (await client.query(`explain (${options}) execute checked${values ? `(${values})` : ''}`)).rows;
      return row['QUERY PLAN'][0].Plan;
    });
  } finally {
    await client.end();
  }
}

const visit = (node: PlanNode, each: (node: PlanNode) => void) => {
  each(node);
  for (const child of node.Plans ?? []) visit(child, each);
};

/**
 * The tables a statement reads with a sequential scan, in the plan PostgreSQL makes for its values (custom) and
 * in the one it may keep for any values (generic): the store's driver prepares statements, so either may run.
 */
export async function sequentialScans(url: string, schema: string, statement: Statement): Promise<string[]> {
  return explaining(url, schema, statement, async (plan) => {
    const scanned = new Set<string>();
    for (const mode of ['force_custom_plan', 'force_generic_plan'])
      visit(await plan(mode, 'format json'), (node) => {
        if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) scanned.add(node['Relation Name']);
      });
    return [...scanned].sort();
  });
}

/** The rows a read-only statement reads from each table when run (its custom plan): returned or filtered out. */
export async function rowsRead(url: string, schema: string, statement: Statement): Promise<Record<string, number>> {
  return explaining(url, schema, statement, async (plan) => {
    const read: Record<string, number> = {};
    visit(await plan('force_custom_plan', 'analyze, format json'), (node) => {
      const table = node['Relation Name'];
      if (!table) return;
      const perLoop =
        (node['Actual Rows'] ?? 0) +
        (node['Rows Removed by Filter'] ?? 0) +
        (node['Rows Removed by Index Recheck'] ?? 0);
      read[table] = (read[table] ?? 0) + perLoop * (node['Actual Loops'] ?? 1);
    });
    return read;
  });
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

/** A partition's name as its partitioned table's (runs_d20261022_k30 as runs). */
const unpartitioned = (name: string) => name.replace(/_d\d{8}_(k\d+|default)/, '');

/** One line of a plan: the node, what it reads, the rows it gave over its loops. */
const nodeLine = (node: PlanNode) => {
  const on = node['Relation Name'] ? ` on ${unpartitioned(node['Relation Name'])}` : '';
  const using = node['Index Name'] ? ` using ${unpartitioned(node['Index Name'])}` : '';
  const loops = node['Actual Loops'] ?? 1;
  const removed = (node['Rows Removed by Filter'] ?? 0) * loops;
  return `${node['Node Type']}${on}${using}: ${(node['Actual Rows'] ?? 0) * loops} rows${loops > 1 ? ` in ${loops} loops` : ''}${removed ? `, ${removed} filtered out` : ''}`;
};

/** A plan's line without its counts. */
const shape = (line: string) => line.replace(/: \d+ rows.*$/, '');

/** A plan as indented lines, the partitions an Append reads that are read alike as one line with their count. */
function planLines(node: PlanNode, depth = 0): string[] {
  const lines = [`${'  '.repeat(depth)}${nodeLine(node)}`];
  const children = node.Plans ?? [];
  if (node['Node Type'] === 'Append' || node['Node Type'] === 'Merge Append') {
    const alike = new Map<string, { node: PlanNode; count: number; rows: number }>();
    for (const child of children) {
      const key = planLines(child)
        .map((line) => line.replace(/: \d+ rows.*$/, ''))
        .join('|');
      const group = alike.get(key) ?? { node: child, count: 0, rows: 0 };
      group.count += 1;
      group.rows += (child['Actual Rows'] ?? 0) * (child['Actual Loops'] ?? 1);
      alike.set(key, group);
    }
    // Partitions read alike: one line with their rows in all, what is under it without the first's counts.
    for (const { node: child, count, rows } of alike.values()) {
      const [first, ...rest] = planLines(child, depth + 1);
      if (count === 1) lines.push(first, ...rest);
      else lines.push(`${shape(first)}: ${rows} rows in ${count} partitions`, ...rest.map(shape));
    }
  } else for (const child of children) lines.push(...planLines(child, depth + 1));
  return lines;
}

/** A statement's plan as it runs (generic or custom, as the store's driver plans it), and its time. */
export async function explainedPlan(
  url: string,
  schema: string,
  statement: Statement,
): Promise<{ plan: string[]; ms: number }> {
  return explaining(url, schema, statement, async (plan) => {
    const mode = statement.generic ? 'force_generic_plan' : 'force_custom_plan';
    await plan(mode, 'analyze, format json'); // warm: the time of a read whose pages are cached
    const root = await plan(mode, 'analyze, format json');
    return { plan: planLines(root), ms: Math.round((root['Actual Total Time'] ?? 0) * 100) / 100 };
  });
}
