// @ts-check
/**
 * The embedded database's own thread (see PgliteDriver): it opens PGlite and executes what the
 * driver sends, one request at a time, in the order received. Plain JavaScript (type-checked
 * through JSDoc), so the thread loads no TypeScript loader. Run as a process with `--create <dir>`,
 * it creates a database in that directory and exits.
 */
import { PGlite } from '@electric-sql/pglite';
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

/** @param {PGlite} db @param {ThreadRequest} request @returns {Promise<unknown[] | undefined>} */
async function execute(db, request) {
  switch (request.kind) {
    case 'query':
      return (await db.query(/** @type {string} */ (request.text), request.params)).rows;
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
    let previous = Promise.resolve();
    port.on('message', (/** @type {ThreadRequest} */ request) => {
      previous = previous.then(() =>
        execute(db, request).then(
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
