import { parseArgs } from 'node:util';
import { socketAdmin, storeAdmin, type AdminCommands } from './admin.ts';
import { loadConfig, type Config } from './config.ts';
import { DataDirLock } from './data-dir.ts';
import { openStore, Platform, VERSION, type Roles } from './platform.ts';
import { DASHBOARD_PATH } from '../api/dashboard.ts';

const USAGE = `tributary ${VERSION}: multi-tenant integration runtime

Usage: tributary <command> [options]
  serve                      API and worker in one process (default; npm start)
  api                        API only (needs DATABASE_URL)
  worker                     worker only (needs DATABASE_URL)
  migrate                    apply database migrations and exit
  tenant create <id> [--name <name>]
  client create --tenant <id> [--scope <scope>]... | --operator
Configuration is read from the environment: see README.md.`;

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' }, tenant: { type: 'string' }, scope: { type: 'string', multiple: true },
      operator: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    },
  });
  const [command = 'serve', subcommand, argument] = positionals;
  if (values.help || command === 'help') return void console.log(USAGE);
  const config = loadConfig();

  switch (command) {
    case 'serve':
      return serve(config, { api: true, worker: true, embeddedRedis: !config.databaseUrl });
    case 'api':
      return serve(config, { api: true, worker: false });
    case 'worker':
      return serve(config, { api: false, worker: true });
    case 'migrate': {
      const { store, lock } = await openStore(config);
      await store.close();
      lock?.release();
      return void console.log('migrations applied');
    }
    case 'tenant':
      if (subcommand !== 'create' || !argument) throw new UsageError('tenant create <id> [--name <name>]');
      return withAdmin(config, async (admin) => print(await admin.createTenant({ id: argument, name: values.name })));
    case 'client':
      if (subcommand !== 'create' || (!values.tenant && !values.operator)) throw new UsageError('client create --tenant <id> [--scope <scope>]... | --operator');
      return withAdmin(config, async (admin) =>
        print(await admin.createClient({ tenantId: values.tenant, scopes: values.scope, operator: values.operator ?? false })),
      );
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

class UsageError extends Error {}

const print = (value: unknown) => console.log(JSON.stringify(value));

/** Admin commands go to the store directly, or to the running server that holds the embedded store. */
async function withAdmin(config: Config, fn: (admin: AdminCommands) => Promise<void>) {
  if (!config.databaseUrl && DataDirLock.holder(config.dataDir) !== undefined) return fn(socketAdmin(config.dataDir));
  const { store, lock } = await openStore(config);
  try {
    await fn(storeAdmin(store));
  } finally {
    await store.close();
    lock?.release();
  }
}

async function serve(config: Config, roles: Roles) {
  const platform = await Platform.start(config, roles);
  const { url } = platform;
  if (roles.api) {
    console.error(`Tributary ${VERSION} on ${url}
  API:        ${url}/api/v1   (OpenAPI: ${url}/openapi.json)
  Flow URLs:  ${url}/hooks/<tenant>/<flow key>
  Dashboard:  ${url}${DASHBOARD_PATH}   (sign in with an operator client's id and secret)
  Credentials: npx tributary tenant create acme && npx tributary client create --tenant acme
               npx tributary client create --operator    (for the dashboard)`);
  } else {
    console.error(`Tributary ${VERSION} worker consuming ${config.redisUrl} (prefix ${config.redisPrefix})`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, 'shutting down');
    platform.close().then(() => process.exit(0), (error) => {
      platform.logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error instanceof UsageError ? `${error.message}\n\n${USAGE}` : `tributary: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
