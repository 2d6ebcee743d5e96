/**
 * The embedded database's own thread (see PgliteDriver): it opens PGlite and executes what the
 * driver sends, one request at a time, in the order received.
 */
import { PGlite } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';

export interface ThreadRequest {
  id: number;
  kind: 'query' | 'exec' | 'close';
  text?: string;
  params?: unknown[];
}

/** A PostgreSQL error's code and names survive the crossing; its class, detail and the statement's values do not. */
export type ThreadReply = { id: number; rows?: unknown[]; error?: Record<string, unknown> & { message: string } };

export interface ThreadOptions {
  dataDir?: string;
  /** Already checked by assertIdentifier. */
  schema?: string;
}

const port = parentPort!;
const { dataDir, schema } = workerData as ThreadOptions;

async function execute(db: PGlite, request: ThreadRequest): Promise<unknown[] | undefined> {
  switch (request.kind) {
    case 'query':
      return (await db.query(request.text!, request.params)).rows;
    case 'exec':
      await db.exec(request.text!);
      return undefined;
    case 'close':
      await db.close();
      return undefined;
  }
}

const errorFields = (error: unknown) => {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code, constraint, table, column } = error as Error & Record<string, unknown>;
  return { message: error.message, code, constraint, table, column };
};

try {
  const db = await PGlite.create(dataDir);
  if (schema) await db.exec(`create schema if not exists ${schema}; set search_path to ${schema}`);
  let previous = Promise.resolve();
  port.on('message', (request: ThreadRequest) => {
    previous = previous.then(() =>
      execute(db, request).then(
        (rows) => port.postMessage({ id: request.id, rows } satisfies ThreadReply),
        (error: unknown) => port.postMessage({ id: request.id, error: errorFields(error) } satisfies ThreadReply),
      ),
    );
  });
  port.postMessage({ id: 0 } satisfies ThreadReply);
} catch (error) {
  port.postMessage({ id: 0, error: errorFields(error) } satisfies ThreadReply);
}
