// @ts-check
/**
 * The embedded database's own thread (see PgliteDriver): it opens PGlite and executes what the
 * driver sends, one request at a time, in the order received. Plain JavaScript (type-checked
 * through JSDoc), so the thread loads no TypeScript loader. Run as a process with `--create <dir>`,
 * it creates a database in that directory and exits.
 */
import { PGlite, parse, protocol } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';

/** @typedef {import('./pglite-driver.ts').ThreadRequest} ThreadRequest */
/** @typedef {import('./pglite-driver.ts').ThreadReply} ThreadReply */
/** @typedef {import('./pglite-driver.ts').ThreadOptions} ThreadOptions */

/**
 * PostgreSQL's own buffer pool inside the WebAssembly memory, which never shrinks: 128 MB by default.
 * Pages it does not hold are read from the OS's file cache, which is shared and let go under pressure.
 */
const SETTINGS = ['shared_buffers = 32MB'];

const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/** Prepared statements kept at most: each holds its plan in the WebAssembly memory, which never shrinks. */
const MAX_PREPARED = 500;

/**
 * Statements as PostgreSQL's extended protocol runs them by name: parsed, analysed (and, once PostgreSQL finds its
 * generic plan good enough, planned) once, then bound and executed in one call into the database. PGlite's own
 * query() parses, describes and plans each statement anew in six calls: for the intake's statement, half its time.
 */
class PreparedStatements {
  /** @type {Map<string, { name: string, paramTypes: number[] }>} by text, least recently used first */
  #statements = new Map();
  #nextName = 0;
  /** Whether the session plans generically (QueryOptions.plan): switched only when a statement asks otherwise. */
  #generic = false;

  /** @param {PGlite} db */
  constructor(db) {
    this.db = db;
  }

  /**
   * A statement's rows. In a transaction the session's planning is left as it is: a setting made there would be
   * undone by a rollback (`begin` resets it).
   * @param {string} text @param {unknown[]} params
   * @param {{ generic?: boolean, inTransaction?: boolean, refreshPlans?: boolean }} options
   */
  async query(text, params, { generic = false, inTransaction = false, refreshPlans = false }) {
    if (!inTransaction) await this.planning(generic, refreshPlans);
    const statement = this.#statements.get(text) ?? (await this.#prepare(text));
    this.#statements.delete(text);
    this.#statements.set(text, statement);
    const values = params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const serializer = this.db.serializers[statement.paramTypes[index]];
      return serializer ? serializer(value) : String(value);
    });
    try {
      const { messages } = await this.db.execProtocol(
        Buffer.concat([
          serialize.bind({ statement: statement.name, values }),
          serialize.describe({ type: 'P' }),
          serialize.execute({}),
          serialize.sync(),
        ]),
      );
      return parse.parseResults(messages, this.db.parsers)[0]?.rows ?? [];
    } catch (error) {
      // "cached plan must not change result type": a table it reads changed its columns. Prepared again next time.
      if (/** @type {{ code?: string }} */ (error).code === '0A000') await this.#forget(text);
      throw error;
    }
  }

  /** @param {string} text */
  async #forget(text) {
    const statement = this.#statements.get(text);
    if (!statement) return;
    this.#statements.delete(text);
    await this.db.execProtocol(Buffer.concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()]));
  }

  /** @param {string} text */
  async #prepare(text) {
    if (this.#statements.size >= MAX_PREPARED)
      await this.#forget(/** @type {string} */ (this.#statements.keys().next().value));
    const name = `tributary_${this.#nextName++}`;
    const { messages } = await this.db.execProtocol(
      Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]),
    );
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    this.#statements.set(text, statement);
    return statement;
  }

  /**
   * Plans made for each call's values, or generic ones; every cached plan dropped first when the driver says so
   * (PlanAging: no autovacuum here, so no statistics change to drop them). @param {boolean} generic @param {boolean} refresh
   */
  async planning(generic, refresh) {
    if (refresh) await this.db.exec('discard plans');
    if (generic === this.#generic) return;
    await this.db.exec(generic ? 'set plan_cache_mode = force_generic_plan' : 'reset plan_cache_mode');
    this.#generic = generic;
  }
}

const { serialize } = protocol;

/**
 * @param {PGlite} db @param {PreparedStatements} statements @param {ThreadRequest} request
 * @returns {Promise<unknown[] | undefined>}
 */
async function execute(db, statements, request) {
  switch (request.kind) {
    case 'query':
      return statements.query(/** @type {string} */ (request.text), request.params ?? [], request);
    case 'begin':
      await statements.planning(false, request.refreshPlans ?? false);
      await db.exec('begin');
      return undefined;
    case 'exec':
      await db.exec(/** @type {string} */ (request.text));
      return undefined;
    case 'close':
      await db.close();
      return undefined;
  }
}

/** @param {unknown} error @returns {Record<string, unknown> & { message: string }} */
function errorFields(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code, constraint, table, column } = /** @type {Error & Record<string, unknown>} */ (error);
  return { message: error.message, code, constraint, table, column };
}

/** @param {ThreadReply} reply */
const reply = (reply) => port.postMessage(reply);

/** Opens the database and serves the driver's requests. @param {ThreadOptions} options */
async function serve({ dataDir, schema }) {
  try {
    const db = await PGlite.create(dataDir, { postgresqlconf: SETTINGS });
    if (schema) await db.exec(`create schema if not exists ${schema}; set search_path to ${schema}`);
    const statements = new PreparedStatements(db);
    let previous = Promise.resolve();
    port.on('message', (/** @type {ThreadRequest} */ request) => {
      previous = previous.then(() =>
        execute(db, statements, request).then(
          (rows) => reply({ id: request.id, rows }),
          (error) => reply({ id: request.id, error: errorFields(error) }),
        ),
      );
    });
    reply({ id: 0 });
  } catch (error) {
    reply({ id: 0, error: errorFields(error) });
  }
}

if (parentPort) {
  await serve(workerData);
} else if (process.argv[2] === '--create') {
  const db = await PGlite.create(process.argv[3], { postgresqlconf: SETTINGS });
  await db.close();
}
