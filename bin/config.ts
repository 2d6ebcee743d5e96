import path from 'node:path';
import { SchemaValidator, ValidationError } from '../engine/model/index.ts';
import { type AddressRefusal, addressRanges, nonPublicRefusal } from '../engine/outbound/index.ts';

/** One setting: its environment variable, its JSON Schema (type, bounds, default) and what it means. */
interface Setting {
  env: string;
  schema: {
    type?: 'integer' | 'string';
    enum?: readonly string[];
    default?: unknown;
    minimum?: number;
    maximum?: number;
    pattern?: string;
  };
  /** Sizes are written as bytes, or with kb or mb. */
  unit?: 'bytes';
  /** What the docs show as the default, where the value alone would not say it. */
  shownDefault?: string;
  description: string;
}

const MB = 1024 * 1024;

/** A limit on what one tenant keeps: checked in the database as rows are written, whichever way. */
const stateLimit = (env: string, defaultValue: number, what: string, unit?: 'bytes') =>
  ({
    env,
    schema: { type: 'integer', minimum: 0, default: defaultValue },
    ...(unit ? { unit } : {}),
    shownDefault: `\`${unit ? `${defaultValue / MB}mb` : defaultValue}\` (\`0\`: no limit)`,
    description:
      `${what}${unit ? ' As JSON text.' : ''} Checked in the database as rows are written, whichever way (the API, ` +
      'an operation in a run): a write past it fails, with 409 or a permanent node error naming this setting.',
  }) as const;

/**
 * Every setting, read from the environment. The one source of the configuration: loading (with
 * coercion and bounds), the Config type and the table in docs/configuration.md come from it.
 */
export const settings = {
  port: {
    env: 'PORT',
    schema: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    description: 'HTTP port of the API.',
  },
  host: {
    env: 'HOST',
    schema: { type: 'string', default: '0.0.0.0' },
    description: 'Interface the API listens on.',
  },
  trustProxy: {
    env: 'TRUST_PROXY',
    schema: { type: 'string', default: 'false' },
    shownDefault: '`false`',
    description:
      "Which proxies in front may name the caller's address in `X-Forwarded-For` (Express' `trust proxy`: `true`, " +
      'a number of hops, or addresses and subnets such as `loopback, 10.0.0.0/8`). Failed sign-ins are counted per ' +
      "address: behind a proxy that is not trusted, every caller has the proxy's address.",
  },
  publicUrl: {
    env: 'PUBLIC_URL',
    schema: { type: 'string', pattern: '^https?://' },
    shownDefault: '`http://127.0.0.1:$PORT`',
    description:
      'How clients and Shopify reach this process (behind a proxy or tunnel, its address there); printed, and the ' +
      'base of flow URLs.',
  },
  dataDir: {
    env: 'DATA_DIR',
    schema: { type: 'string', default: './data' },
    description:
      'Embedded mode: PGlite data, the generated secrets key, the embedded Redis, the lock file and the admin socket.',
  },
  databaseUrl: {
    env: 'DATABASE_URL',
    schema: { type: 'string' },
    description: '`postgres://...`: use PostgreSQL instead of PGlite (required for separate `api`/`worker` processes).',
  },
  databaseSchema: {
    env: 'DATABASE_SCHEMA',
    schema: { type: 'string' },
    shownDefault: 'default schema',
    description: 'Schema to work in (created by the migrations).',
  },
  redisUrl: {
    env: 'REDIS_URL',
    schema: { type: 'string', default: 'redis://127.0.0.1:6379' },
    description:
      'Redis for the queues (`rediss://` for TLS). Must run with `maxmemory-policy noeviction`, ideally with AOF.',
  },
  redisClusterNodes: {
    env: 'REDIS_CLUSTER_NODES',
    schema: { type: 'string', pattern: '^[^,\\s]+(,[^,\\s]+)*$' },
    shownDefault: 'unset: one Redis at `REDIS_URL`',
    description:
      'Run on a Redis Cluster instead: some of its nodes, comma-separated, each `host:port` or a `redis://` or ' +
      '`rediss://` URL (a user and password in the URLs, and TLS, go for every node). `REDIS_URL` is then not used. ' +
      'See docs/deployment.md for which keys share a slot.',
  },
  redisPrefix: {
    env: 'REDIS_PREFIX',
    // Braces would make a hash tag of their own and pull every key into one cluster slot.
    schema: { type: 'string', default: 'tributary', pattern: '^[^{}]+$' },
    description: 'Key prefix of every queue and Redis key (no braces: the keys add their own hash tags).',
  },
  logLevel: {
    env: 'LOG_LEVEL',
    schema: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' },
    description: 'pino level: `trace` … `fatal`, or `silent`.',
  },
  authIssuer: {
    env: 'AUTH_ISSUER',
    schema: { type: 'string' },
    shownDefault: 'the public URL (`PUBLIC_URL`, else `http://127.0.0.1:PORT`)',
    description:
      'Expected (and, embedded, issued) `iss` of tokens, and the issuer the discovery metadata names (RFC 8414: a ' +
      'URL). Every API host of a deployment must agree: the same PUBLIC_URL, or the same AUTH_ISSUER. With ' +
      "`AUTH_JWKS_URL`, set it to the identity provider's issuer.",
  },
  authAudience: {
    env: 'AUTH_AUDIENCE',
    schema: { type: 'string', default: 'tributary-api' },
    description: "Expected `aud`; the token request's `audience` must match it.",
  },
  authJwksUrl: {
    env: 'AUTH_JWKS_URL',
    schema: { type: 'string', pattern: '^https?://' },
    shownDefault: "unset: the embedded issuer's keys, read from the store",
    description:
      "An external identity provider's JWKS URL, where its signing keys are fetched (a failure answers 503 naming it).",
  },
  secretsKey: {
    env: 'SECRETS_KEY',
    schema: { type: 'string' },
    shownDefault: 'embedded: generated in `DATA_DIR/secrets.key` (mode 0600)',
    description:
      '`keyid:base64(32 bytes)[,keyid:key...]`. The first key seals new values; the others still open old ones ' +
      '(rotation). Required with `DATABASE_URL`. Generate one with `node -e ' +
      "\"console.log('k1:'+require('crypto').randomBytes(32).toString('base64'))\"`.",
  },
  bodyLimitBytes: {
    env: 'BODY_LIMIT',
    schema: { type: 'integer', minimum: 1, default: 1024 * 1024 },
    unit: 'bytes',
    shownDefault: '`1mb`',
    description: 'Largest request body (API and flow URLs); larger: 413. Accepts bytes, `kb`, `mb`.',
  },
  workerConcurrency: {
    env: 'WORKER_CONCURRENCY',
    schema: { type: 'integer', minimum: 1, default: 64 },
    description:
      'Runs one worker process executes at once. Runs mostly wait on outside systems, so a worker keeps many in ' +
      'flight; their store statements are grouped, so more in flight also costs less CPU per run (on two cores, 64 ' +
      "drains 10–20 % more runs per second than 32). An outside system's own limit (an ERP account allows 5–20 " +
      "concurrent requests) is not this setting's job: see `TENANT_CONCURRENCY`, and the ERP's refusal is retried.",
  },
  tenantConcurrency: {
    env: 'TENANT_CONCURRENCY',
    schema: { type: 'integer', minimum: 0, default: 0 },
    shownDefault: '`0` (no limit)',
    description:
      'Most runs of one tenant executing at once, across all workers. ' +
      "Runs are dispatched to workers tenant by tenant in turn whatever this is, so another tenant's run waits for " +
      'the next free slot, not behind a backlog; with a limit, one tenant also cannot hold every slot while its ' +
      "runs wait on something slow (then another tenant's run finds a slot free). A tenant at its limit gets no " +
      'run dispatched until one of its runs ends. On a shared deployment, a share of `WORKER_CONCURRENCY` × workers.',
  },
  reservedSlotsPercent: {
    env: 'RESERVED_SLOTS_PERCENT',
    schema: { type: 'integer', minimum: 0, maximum: 50, default: 10 },
    description:
      "Share of the live workers' slots (their concurrency, together) kept free to execute for tenants with few " +
      'runs executing: once only that many are free (runs queued ahead for the workers count as taking one), a ' +
      'tenant already running as many waits for its next turn, and its runs back from a retry or a dead worker ' +
      "wait a second (30 times at most). A tenant with one run to do then starts it at once while another tenant's runs hold every " +
      'other slot waiting on something slow, also after a worker died. The price: one tenant alone runs at most ' +
      'the unreserved slots with none queued ahead (about 12 % fewer runs/s on the engine benchmark at 10). `0` ' +
      'turns it off (a deployment with one tenant).',
  },
  tenantDeliveriesPerSecond: {
    env: 'TENANT_DELIVERIES_PER_SECOND',
    schema: { type: 'integer', minimum: 1, default: 100 },
    description:
      "Deliveries one tenant's flow URLs accept per second, sustained (a token bucket shared by every API " +
      'process). Over it a delivery is answered `429` with `Retry-After` and nothing is recorded; senders such as ' +
      'Shopify retry. What was accepted is never dropped.',
  },
  tenantDeliveryBurst: {
    env: 'TENANT_DELIVERY_BURST',
    schema: { type: 'integer', minimum: 1, default: 500 },
    description: 'Deliveries one tenant may send at once above the sustained rate (the size of its bucket).',
  },
  tenantApiCallsPerSecond: {
    env: 'TENANT_API_CALLS_PER_SECOND',
    schema: { type: 'integer', minimum: 1, default: 50 },
    description:
      "API calls one tenant's clients may make per second, sustained (a token bucket shared by every API process); " +
      "over it, `429` with `Retry-After`. Operators' calls do not count; while Redis does not answer, calls are " +
      'let through.',
  },
  tenantApiCallBurst: {
    env: 'TENANT_API_CALL_BURST',
    schema: { type: 'integer', minimum: 1, default: 200 },
    description: 'API calls one tenant may make at once above the sustained rate (the size of its bucket).',
  },
  tenantMaxFlows: stateLimit('TENANT_MAX_FLOWS', 1_000, 'Most flows one tenant keeps.'),
  tenantMaxFlowBytes: stateLimit(
    'TENANT_MAX_FLOW_BYTES',
    256 * MB,
    "Most bytes one tenant's flows take, drafts and every published version.",
    'bytes',
  ),
  tenantMaxVariables: stateLimit('TENANT_MAX_VARIABLES', 1_000, 'Most variables one tenant keeps.'),
  tenantMaxVariableBytes: stateLimit(
    'TENANT_MAX_VARIABLE_BYTES',
    16 * MB,
    "Most bytes one tenant's variables take in all.",
    'bytes',
  ),
  tenantMaxSecrets: stateLimit('TENANT_MAX_SECRETS', 1_000, 'Most secrets one tenant keeps (each at most 64 KiB).'),
  tenantMaxActionVersions: stateLimit(
    'TENANT_MAX_ACTION_VERSIONS',
    5_000,
    'Most low-code action versions one tenant keeps (every saved version counts).',
  ),
  tenantMaxDestinations: stateLimit('TENANT_MAX_DESTINATIONS', 200, 'Most destinations one tenant keeps.'),
  tenantMaxDataSpaces: stateLimit('TENANT_MAX_DATA_SPACES', 200, 'Most data spaces one tenant keeps.'),
  tenantMaxDocuments: stateLimit(
    'TENANT_MAX_DOCUMENTS',
    1_000_000,
    'Most documents one tenant keeps across its data spaces.',
  ),
  tenantMaxDocumentBytes: stateLimit(
    'TENANT_MAX_DOCUMENT_BYTES',
    1024 * MB,
    "Most bytes one tenant's documents take in all.",
    'bytes',
  ),
  tenantMaxQueuedRuns: {
    env: 'TENANT_MAX_QUEUED_RUNS',
    schema: { type: 'integer', minimum: 0, default: 100_000 },
    shownDefault: '`100000` (`0`: no cap)',
    description:
      'Most runs of one tenant waiting to start; while it has more, its flow URLs answer `429` (`Retry-After: ' +
      "10`) and record nothing. Runs its own flows create (a batch's tasks) are not refused.",
  },
  workerLockMs: {
    env: 'WORKER_LOCK_MS',
    schema: { type: 'integer', minimum: 1000, default: 30_000 },
    description: "Lock on a running job; a killed worker's job is taken over once it expires.",
  },
  workerStalledIntervalMs: {
    env: 'WORKER_STALLED_INTERVAL_MS',
    schema: { type: 'integer', minimum: 1000, default: 30_000 },
    description:
      "How often workers look for jobs whose lock expired. A SIGKILLed worker's run resumes within about lock + " +
      'interval.',
  },
  nodeTimeoutMs: {
    env: 'NODE_TIMEOUT_MS',
    schema: { type: 'integer', minimum: 1, default: 30_000 },
    description: 'Default `timeoutMs` of a node (a timeout is a retryable error).',
  },
  outboundPrivateAddresses: {
    env: 'OUTBOUND_PRIVATE_ADDRESSES',
    schema: { type: 'string', enum: ['allow', 'refuse'] },
    shownDefault: 'embedded: `allow`; with `DATABASE_URL`: `refuse`',
    description:
      "Whether operations' HTTP requests (`http.request`, the ERP, the shop, webhook registration) may reach " +
      'loopback, private, link-local and other non-public addresses, checked after name resolution and on every ' +
      "redirect. `refuse` keeps a tenant's URL away from the cloud metadata service and this network's own " +
      "services; `allow` where tenants' systems are on your network, or for a local stand-in while developing.",
  },
  outboundAllowedNetworks: {
    env: 'OUTBOUND_ALLOWED_NETWORKS',
    schema: { type: 'string' },
    shownDefault: 'none',
    description:
      'Where non-public addresses are refused: the ranges requests may reach all the same, e.g. ' +
      '`10.8.0.0/16, fd12::/16` (the network of an on-premises ERP).',
  },
  expressionTimeoutMs: {
    env: 'EXPRESSION_TIMEOUT_MS',
    schema: { type: 'integer', minimum: 1, default: 1000 },
    description:
      'Hard deadline of one JSONata evaluation (also bounded in depth, 300): an expression evaluated in the sandbox ' +
      'is killed at it, and its node fails permanently naming the limit.',
  },
  expressionMemoryMb: {
    env: 'EXPRESSION_MEMORY_MB',
    schema: { type: 'integer', minimum: 16, default: 128 },
    description:
      'Heap of each expression sandbox process; an expression that needs more (or hits a size limit of V8) kills ' +
      'only its sandbox process, and its node fails permanently naming the limit.',
  },
  expressionProcesses: {
    env: 'EXPRESSION_PROCESSES',
    schema: { type: 'integer', minimum: 1, default: 2 },
    description:
      'Sandbox processes per API or worker process (started on first use, replaced when one is killed); more ' +
      "sandboxed evaluations wait, served by tenant in turn, so one tenant's backlog does not hold another's.",
  },
  maxStepOutputBytes: {
    env: 'MAX_STEP_OUTPUT_BYTES',
    schema: { type: 'integer', minimum: 1, default: 1024 * 1024 },
    unit: 'bytes',
    shownDefault: '`1mb`',
    description: 'Largest output a node may store; larger fails the node with a clear error.',
  },
  intakeCacheEntries: {
    env: 'INTAKE_CACHE_ENTRIES',
    schema: { type: 'integer', minimum: 1, default: 10_000 },
    description:
      'Most flow URLs an API process keeps resolved (least recently used out), about 1 KB each. A URL that names ' +
      'no active flow is remembered for a second only: unknown URLs cannot grow the process.',
  },
  intakeCacheTtlMs: {
    env: 'INTAKE_CACHE_TTL_MS',
    schema: { type: 'integer', minimum: 0, default: 2000 },
    description:
      "How long a process reuses a flow URL's resolution. A message is only recorded for a flow's active version, " +
      'whatever a process cached: once a deactivate, delete or publish returns, no process accepts for the version ' +
      'it replaced. A URL newly activated, or a rotated verification secret, reaches other API processes within ' +
      'this time.',
  },
  readyMaxEventLoopLagMs: {
    env: 'READY_MAX_EVENT_LOOP_LAG_MS',
    schema: { type: 'integer', minimum: 1, default: 1000 },
    description:
      "`/readyz` fails while this process's event loop lags more than this (p99 over the last 5 s): it cannot " +
      'answer in time. A backlog, a stopped worker or a recovery is reported there, never a failure.',
  },
  replyWaitMs: {
    env: 'REPLY_WAIT_MS',
    schema: { type: 'integer', minimum: 0, maximum: 60_000, default: 10_000 },
    description:
      "How long a flow URL whose flow has a reply node waits for the run's reply; after it, the sender gets the " +
      'usual 202 and the run goes on.',
  },
  adapterWaitMs: {
    env: 'ADAPTER_WAIT_MS',
    schema: { type: 'integer', minimum: 0, default: 25_000 },
    description: "How long the deprecated adapter route waits for its run before answering 202 with the run's ids.",
  },
  runLogRetentionDays: {
    env: 'RUN_LOG_RETENTION_DAYS',
    schema: { type: 'integer', minimum: 1, default: 14 },
    description:
      'Run log lines (the Logs API) and alerts sent (`GET /api/v1/alerts`) older than this are pruned, hourly, by ' +
      'worker processes.',
  },
  retentionDays: {
    env: 'RETENTION_DAYS',
    schema: { type: 'integer', minimum: 7, maximum: 3650, default: 30 },
    description:
      "Days a tenant's messages, runs and steps are kept (a tenant's `retentionDays` limit overrides it); they go " +
      'within a day after, a whole day of them at once. Unfinished runs are kept until they finish. At least 7: a ' +
      'repeated delivery is recognised for 7 days.',
  },
  retentionFailedDays: {
    env: 'RETENTION_FAILED_DAYS',
    schema: { type: 'integer', minimum: 7, maximum: 3650, default: 30 },
    description:
      'Days failed and handled runs, with their messages and steps, are kept (raised to the retention when ' +
      "shorter; a tenant's `failedRetentionDays` limit overrides it).",
  },
  retentionMaxDays: {
    env: 'RETENTION_MAX_DAYS',
    schema: { type: 'integer', minimum: 7, maximum: 3650, default: 90 },
    description: "The most days a tenant's limits may keep its history; also how long rollups (statistics) are kept.",
  },
  alertCheckIntervalMs: {
    env: 'ALERT_CHECK_INTERVAL_MS',
    schema: { type: 'integer', minimum: 100, maximum: 300_000, default: 5000 },
    description: "How often worker processes check each tenant's enabled alert rules.",
  },
  alertTimeoutMs: {
    env: 'ALERT_TIMEOUT_MS',
    schema: { type: 'integer', minimum: 100, maximum: 60_000, default: 10_000 },
    description:
      'How long sending one alert may take. A delivery is leased for twice that: one whose worker died is sent ' +
      'again (with the same `webhook-id`) after it.',
  },
  metricsPort: {
    env: 'METRICS_PORT',
    schema: { type: 'integer', minimum: 0, maximum: 65535 },
    description: 'A `worker` process serves `GET /metrics` on this port (API processes serve it on `PORT`).',
  },
  buildCommit: {
    env: 'BUILD_COMMIT',
    schema: { type: 'string' },
    shownDefault: "the checkout's `HEAD`",
    description: 'The commit `GET /api/v1/version` reports (set it when you deploy without `.git`).',
  },
  shutdownGraceMs: {
    env: 'SHUTDOWN_GRACE_MS',
    schema: { type: 'integer', minimum: 0, default: 10_000 },
    description:
      'On SIGTERM: runs in flight may finish for this long before their operations are aborted; they are handed ' +
      "back at once and resume elsewhere from their checkpoints, the aborted attempt not counted against the node's " +
      'retries (a deploy never fails a run).',
  },
} as const satisfies Record<string, Setting>;

type Settings = typeof settings;
type ValueOf<S extends Setting> = S['schema'] extends { enum: readonly (infer E)[] }
  ? E
  : S['schema']['type'] extends 'integer'
    ? number
    : string;
export type Config = {
  -readonly [K in keyof Settings]:
    | ValueOf<Settings[K]>
    | (Settings[K]['schema'] extends { default: unknown } ? never : undefined);
};

const validator = new SchemaValidator<Config>(
  {
    type: 'object',
    properties: Object.fromEntries(Object.entries(settings).map(([key, setting]) => [key, setting.schema])),
  },
  'configuration',
  { coerce: true },
);

const SIZE = /^(\d+)\s*(b|kb|mb)?$/i;
const UNITS = { b: 1, kb: 1024, mb: 1024 * 1024 };

/** The configuration from these variables (blank counts as unset); a bad value is an error naming its variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings) as Array<[keyof Settings, Setting]>) {
    const text = env[setting.env]?.trim();
    if (!text) continue;
    if (setting.unit === 'bytes') {
      const size = SIZE.exec(text);
      if (!size) throw new Error(`${setting.env} must be a size such as 1048576, 512kb or 1mb, got "${text}"`);
      raw[key] = Number(size[1]) * UNITS[(size[2] ?? 'b').toLowerCase() as keyof typeof UNITS];
    } else {
      raw[key] = text;
    }
  }
  try {
    const config = validator.validate(raw);
    return { ...config, dataDir: path.resolve(config.dataDir) };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const [first] = error.errors;
    const key = first.path.slice(2) as keyof Settings;
    throw new Error(`${settings[key]?.env ?? first.path} ${first.message}, got "${env[settings[key]?.env]?.trim()}"`);
  }
}

/**
 * The outbound addresses this process refuses: a shared deployment (on PostgreSQL) refuses non-public
 * ones unless told otherwise, less OUTBOUND_ALLOWED_NETWORKS; undefined where none are refused.
 */
export function outboundRefusal(config: Config): AddressRefusal | undefined {
  if ((config.outboundPrivateAddresses ?? (config.databaseUrl ? 'refuse' : 'allow')) === 'allow') return undefined;
  try {
    return nonPublicRefusal(config.outboundAllowedNetworks ? addressRanges(config.outboundAllowedNetworks) : undefined);
  } catch (error) {
    throw new Error(`OUTBOUND_ALLOWED_NETWORKS: ${(error as Error).message}`);
  }
}

/** Where clients reach this process (printed, and the base of flow URLs). */
export function baseUrl(config: Config, port = config.port): string {
  return config.publicUrl ?? `http://127.0.0.1:${port}`;
}

/** The settings as the Markdown table docs/configuration.md holds. */
export function settingsTable(): string {
  const shown = (setting: Setting) =>
    setting.shownDefault ?? ('default' in setting.schema ? `\`${String(setting.schema.default)}\`` : '—');
  return [
    '| Variable | Default | Meaning |',
    '|---|---|---|',
    ...Object.values(settings as Record<string, Setting>).map(
      (setting) => `| \`${setting.env}\` | ${shown(setting)} | ${setting.description} |`,
    ),
  ].join('\n');
}

const TABLE_START = '<!-- settings: generated from bin/config.ts by `npm run docs:config` -->';
const TABLE_END = '<!-- /settings -->';

/** The document with its settings table brought up to date (docs/configuration.md). */
export function withSettingsTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the document has no ${TABLE_START} ... ${TABLE_END} block`);
  return `${markdown.slice(0, start + TABLE_START.length)}\n${settingsTable()}\n${markdown.slice(end)}`;
}
