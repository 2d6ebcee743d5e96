import { parseArgs } from 'node:util';
import { socketAdmin, storeAdmin, type AdminCommands } from './admin.ts';
import { changeEnvironment, listEnvironments } from './environments-cli.ts';
import { promoteFlow, pullFlows, pushFlows, USES_FILE } from './flows-cli.ts';
import { captureTest, runTests } from './tests-cli.ts';
import type { TenantApiOptions } from './tenant-api.ts';
import { loadConfig, type Config } from './config/config.ts';
import { DataDirLock, embeddedStoreExists } from './data-dir.ts';
import { openStore, Platform, VERSION, type Roles } from './platform.ts';
import { DASHBOARD_PATH } from '../api/pages/index.ts';
import { allTenantScopes, operatorScope } from '../api/auth/index.ts';

/** How the commands that use the API find it and sign in. */
const API_WHERE = `--url, else TRIBUTARY_URL, else http://localhost:PORT; the client credentials of a client of the
tenant in TRIBUTARY_CLIENT_ID and TRIBUTARY_CLIENT_SECRET`;

const STORE_VARIABLES = `The store is PostgreSQL at DATABASE_URL when it is set, else the embedded one under DATA_DIR
(default ./data). Other settings come from the environment: see docs/configuration.md.`;

/** A command: how each of its forms is called and what it does, and its own --help. */
interface CommandInfo {
  forms: ReadonlyArray<readonly [form: string, summary: string]>;
  help: string;
}

const COMMANDS = {
  serve: {
    forms: [['serve', 'API and worker in one process (the default; npm start)']],
    help: `Serves the API, the flow URLs and the dashboard, and works off runs, in one process. Without
DATABASE_URL it keeps its data under DATA_DIR (created on first start) and starts redis-server when
nothing answers at REDIS_URL.`,
  },
  api: {
    forms: [['api', 'API only (needs DATABASE_URL)']],
    help: 'Serves the API and flow URLs; runs are worked off by `tributary worker` processes.',
  },
  worker: {
    forms: [['worker', 'worker only (needs DATABASE_URL)']],
    help: 'Works off runs and schedules; serves GET /metrics on METRICS_PORT when it is set.',
  },
  migrate: {
    forms: [['migrate', 'create or upgrade the store, then exit']],
    help: 'Applies the database migrations (every process also does so on start, under a lock).',
  },
  tenant: {
    forms: [
      ['tenant create <id> [--name <name>]', 'create a tenant'],
      ['tenant list [--status active|suspended]', 'list tenants (a JSON array)'],
    ],
    help: `<id> is 1-63 lower-case letters, digits or -. Works against the running server's embedded store
(through its admin socket) or PostgreSQL; it never creates a store.`,
  },
  client: {
    forms: [
      [
        'client create (--tenant <id> [--scope <scope>]... [--environment <name>]... | --operator)',
        'create OAuth client credentials (printed once)',
      ],
      ['client list [--tenant <id>]', 'list clients and their scopes (never a secret)'],
      ['client revoke <client id>', 'delete a client: no new tokens; its tokens fail within 30 s'],
    ],
    help: `create prints the credentials for the token endpoint once, as JSON.
  --tenant <id>     a client of one tenant, with every tenant scope unless --scope narrows them
  --scope <scope>   repeatable: ${allTenantScopes.join(', ')}
  --environment <name>  repeatable: the client acts only in these environments of its tenant (default: all)
  --operator        an operator client (scope ${operatorScope}): the dashboard and the platform routes
It never creates a store.`,
  },
  flows: {
    forms: [
      ['flows pull --tenant <id> [--env <name>] --dir <folder>', "write each flow's draft as <key>.flow.json"],
      [
        'flows push --tenant <id> [--env <name>] --dir <folder> [--publish] [--dry-run]',
        "make the tenant's drafts match the files, and say what changes",
      ],
      [
        'flows promote --tenant <id> --key <key> --from <env> --to <env> [--flow-version <n>] [--dry-run]',
        'make a published version run in another environment',
      ],
    ],
    help: `Flows as files, over the API of a running Tributary (${API_WHERE}).
  pull        writes <key>.flow.json per flow (its draft, keys sorted) and ${USES_FILE} (the names of the
              variables, secrets and destinations each flow uses; never values)
  push        checks every *.flow.json as publish would; any problem is printed with its file and path and
              nothing changes. Otherwise each flow's draft becomes its file (flows without a file are left
              alone), printing added, changed (with the fields that change) or unchanged per file.
  promote     the flow's active version in --from (or --flow-version) becomes the running version in --to; refused,
              naming each field, when --to lacks a variable, secret or destination it uses
  --env       the tenant's environment (default production)
  --publish   also make each flow run its draft (a new version where it differs)
  --dry-run   print what push or promote would change, changing nothing
Exit code 0 when done, 1 when refused (what to fix is printed), 2 on a usage mistake.`,
  },
  test: {
    forms: [
      ['test --tenant <id> [--env <name>] --dir <folder> [--flows <folder>]', 'run the recorded tests, offline'],
      ['test capture <run id> --tenant <id> [--env <name>] --dir <folder>', 'record a run as a test'],
    ],
    help: `Tests recorded from runs, over the API of a running Tributary (${API_WHERE}).
  capture     writes <flow key>.<run>.test.json: the run's message, each request its nodes sent with the
              answer (credentials and secrets masked), each step's output or error. Edit it freely:
              the message, what a step should give, "volatile": {"<step>": ["$.path"]} for fields not compared
  test        runs each *.test.json of --dir through its flow: <key>.flow.json in --flows (or --dir) when
              there is one (as \`flows pull\` writes it), else the flow's draft. Every request is answered from
              the recording (nothing is sent, nothing stored); one it lacks fails its step, named. Prints
              PASS or FAIL per test with what differs, then "tests: N passed, M failed"
Exit code 0 when every test passed, 1 otherwise, 2 on a usage mistake.`,
  },
  environment: {
    forms: [
      ['environment list --tenant <id>', "list the tenant's environments"],
      ['environment create <name> --tenant <id>', 'create an empty environment (e.g. staging)'],
      ['environment delete <name> --tenant <id>', 'delete an environment and everything kept in it'],
    ],
    help: `A tenant's environments (production always exists), over the API of a running Tributary
(${API_WHERE}; create and delete need the scope environments:write).`,
  },
} satisfies Record<string, CommandInfo>;

type Command = keyof typeof COMMANDS;

const USAGE = `tributary ${VERSION}: multi-tenant integration runtime

Usage: tributary <command> [options]        tributary <command> --help
${Object.values(COMMANDS)
  .flatMap(({ forms }: CommandInfo) => forms)
  .map(([form, summary]) => `  ${form.length <= 40 ? form.padEnd(42) : `${form}\n${' '.repeat(44)}`}${summary}`)
  .join('\n')}
  --version

${STORE_VARIABLES}`;

const commandHelp = (command: Command) =>
  `Usage: ${COMMANDS[command].forms.map(([form]) => `tributary ${form}`).join('\n       ')}

${COMMANDS[command].help}

${STORE_VARIABLES}`;

/** The second word of each form of a command that has them (tenant create, tenant list...). */
const subcommandsOf = (command: Command): string[] =>
  COMMANDS[command].forms.map(([form]) => form.split(' ')[1]).filter((word) => /^[a-z]+$/.test(word ?? ''));

async function main(argv: string[]) {
  const { values, positionals } = parseCommandLine(argv);
  const [command = 'serve', subcommand, argument] = positionals;
  if (values.version) return void console.log(VERSION);
  if (command === 'help')
    return void console.log(subcommand && isCommand(subcommand) ? commandHelp(subcommand) : USAGE);
  if (!isCommand(command)) throw new UsageError(`unknown command "${command}"`);
  const subcommands = subcommandsOf(command);
  if (subcommand !== undefined && subcommands.length > 0 && !subcommands.includes(subcommand))
    throw new UsageError(`unknown ${command} command "${subcommand}"`, command);
  if (values.help) return void console.log(positionals.length === 0 ? USAGE : commandHelp(command));
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
      if (subcommand === 'create' && argument)
        return withAdmin(config, async (admin) => print(await admin.createTenant({ id: argument, name: values.name })));
      if (subcommand === 'list' && !argument) {
        const status = values.status;
        if (status !== undefined && status !== 'active' && status !== 'suspended')
          throw new UsageError(`--status is active or suspended, not "${status}"`, command);
        return withAdmin(config, async (admin) => print(await admin.listTenants({ status })));
      }
      throw new UsageError('missing or unknown arguments', command);
    case 'client':
      if (subcommand === 'create' && (values.tenant || values.operator))
        return withAdmin(config, async (admin) =>
          print(
            await admin.createClient({
              tenantId: values.tenant,
              scopes: values.scope,
              operator: values.operator ?? false,
              environments: values.environment,
            }),
          ),
        );
      if (subcommand === 'list' && !argument)
        return withAdmin(config, async (admin) => print(await admin.listClients({ tenantId: values.tenant })));
      if (subcommand === 'revoke' && argument)
        return withAdmin(config, async (admin) => print(await admin.revokeClient({ clientId: argument })));
      throw new UsageError('missing or unknown arguments', command);
    case 'flows': {
      const api = { ...tenantApiOptions(config, values, command), print: (line: string) => console.log(line) };
      if (subcommand === 'promote') {
        if (!values.key || !values.from || !values.to || argument)
          throw new UsageError('--key, --from and --to are required', command);
        const asked = values['flow-version'];
        const version = asked === undefined ? undefined : Number(asked);
        if (version !== undefined && !(Number.isInteger(version) && version > 0))
          throw new UsageError(`--flow-version is a version number, not "${asked}"`, command);
        const { key, from, to } = values;
        process.exitCode = await promoteFlow({ ...api, key, from, to, version, dryRun: values['dry-run'] });
        return;
      }
      if (!values.dir || argument) throw new UsageError('--tenant and --dir are required', command);
      const options = { ...api, env: values.env, dir: values.dir, publish: values.publish, dryRun: values['dry-run'] };
      process.exitCode = await (subcommand === 'pull' ? pullFlows(options) : pushFlows(options));
      return;
    }
    case 'test': {
      const api = {
        ...tenantApiOptions(config, values, command),
        env: values.env,
        print: (line: string) => console.log(line),
      };
      if (!values.dir) throw new UsageError('--tenant and --dir are required', command);
      if (subcommand === 'capture') {
        if (!argument) throw new UsageError('the run id is missing', command);
        process.exitCode = await captureTest({ ...api, dir: values.dir, runId: argument });
        return;
      }
      if (argument) throw new UsageError('missing or unknown arguments', command);
      process.exitCode = await runTests({ ...api, dir: values.dir, flows: values.flows });
      return;
    }
    case 'environment': {
      const api = { ...tenantApiOptions(config, values, command), print: (line: string) => console.log(line) };
      if (subcommand === 'list' && !argument) return listEnvironments(api);
      if ((subcommand === 'create' || subcommand === 'delete') && argument)
        return changeEnvironment(api, subcommand, argument);
      throw new UsageError('missing or unknown arguments', command);
    }
  }
}

function parseCommandLine(argv: string[]) {
  // The command, for a usage error's help: the first word, when it names one.
  const first = argv.find((word) => !word.startsWith('-'));
  const command = first !== undefined && isCommand(first) ? first : undefined;
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        status: { type: 'string' },
        tenant: { type: 'string' },
        env: { type: 'string' },
        environment: { type: 'string', multiple: true },
        key: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        'flow-version': { type: 'string' },
        scope: { type: 'string', multiple: true },
        operator: { type: 'boolean' },
        dir: { type: 'string' },
        flows: { type: 'string' },
        url: { type: 'string' },
        publish: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    // An unknown option or one without its value: say so with the usage, not as a crash.
    throw new UsageError((error as Error).message, command);
  }
}

const isCommand = (name: string): name is Command => Object.hasOwn(COMMANDS, name);

/** A mistake in how the command was called: exit code 2, with the command's usage. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: Command,
  ) {
    super(message);
  }
}

const print = (value: unknown) => console.log(JSON.stringify(value));

/** Where the API is and the client credentials to call it with, from the options and the environment. */
function tenantApiOptions(
  config: Config,
  values: { tenant?: string; url?: string },
  command: Command,
): TenantApiOptions {
  if (!values.tenant) throw new UsageError('--tenant is required', command);
  const { TRIBUTARY_CLIENT_ID: clientId, TRIBUTARY_CLIENT_SECRET: clientSecret } = process.env;
  if (!clientId || !clientSecret)
    throw new UsageError('set TRIBUTARY_CLIENT_ID and TRIBUTARY_CLIENT_SECRET to a client of the tenant', command);
  const url = (values.url ?? process.env.TRIBUTARY_URL ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return { url, tenant: values.tenant, clientId, clientSecret };
}

/**
 * Admin commands go to PostgreSQL, to the running server that holds the embedded store (through its
 * socket), or to an embedded store at rest. They never create a store: a mistyped or missing DATA_DIR
 * would otherwise give credentials that the running server does not know.
 */
async function withAdmin(config: Config, fn: (admin: AdminCommands) => Promise<void>) {
  if (!config.databaseUrl) {
    if (DataDirLock.holder(config.dataDir) !== undefined) return fn(socketAdmin(config.dataDir));
    if (!embeddedStoreExists(config.dataDir)) throw new Error(noStoreHere(config.dataDir));
  }
  const { store, lock } = await openStore(config);
  try {
    await fn(storeAdmin(store));
  } finally {
    await store.close();
    lock?.release();
  }
}

function noStoreHere(dataDir: string): string {
  const servers = DataDirLock.running();
  const hint =
    servers.length > 0
      ? servers
          .map(
            ({ pid, dataDir: theirs }) =>
              `  a server (pid ${pid}) is running with DATA_DIR=${theirs}: prefix the command with DATA_DIR=${theirs}`,
          )
          .join('\n')
      : '  start the server first (npm start), or set DATA_DIR to the directory a server uses';
  return `no Tributary store at ${dataDir} (DATA_DIR, default ./data), and this command does not create one:
${hint}
  (or set DATABASE_URL and SECRETS_KEY to use PostgreSQL)`;
}

async function serve(config: Config, roles: Roles) {
  const platform = await Platform.start(config, roles);
  const { url } = platform;
  if (roles.api) {
    console.error(`Tributary ${VERSION} on ${url}
  API:        ${url}/api/v1   (reference: ${url}/docs)
  Flow URLs:  ${url}/hooks/<tenant>/<flow key>
  Dashboard:  ${url}${DASHBOARD_PATH}   (sign in with an operator client's id and secret)
  Credentials: npx tributary tenant create acme && npx tributary client create --tenant acme
               npx tributary client create --operator    (for the dashboard)`);
  } else {
    console.error(`Tributary ${VERSION} worker consuming ${platform.redis.printable} (prefix ${config.redisPrefix})`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, 'shutting down');
    platform.close().then(
      () => process.exit(0),
      (error) => {
        platform.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main(process.argv.slice(2)).catch((error) => {
  if (error instanceof UsageError) {
    console.error(`tributary: ${error.message}\n\n${error.command ? commandHelp(error.command) : USAGE}`);
    process.exit(2);
  }
  console.error(`tributary: ${failure(error)}`);
  process.exit(1);
});

/** What went wrong, said so that the reader knows what to change. */
function failure(error: unknown): string {
  const { code, port } = error as { code?: string; port?: number };
  if (code === 'EADDRINUSE')
    return `port ${port} is in use (another Tributary, or another server): stop it, or set PORT`;
  return error instanceof Error ? error.message : String(error);
}
