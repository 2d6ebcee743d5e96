import path from 'node:path';

/** Every setting, from the environment, with its default. The README's configuration table mirrors this. */
export interface Config {
  port: number;
  host: string;
  publicUrl: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  databaseSchema: string | undefined;
  redisUrl: string;
  redisPrefix: string;
  logLevel: string;
  authIssuer: string;
  authAudience: string;
  authJwksUrl: string | undefined;
  secretsKey: string | undefined;
  bodyLimitBytes: number;
  workerConcurrency: number;
  tenantConcurrency: number;
  workerLockMs: number;
  workerStalledIntervalMs: number;
  nodeTimeoutMs: number;
  expressionTimeoutMs: number;
  /** Heap of each expression sandbox process. */
  expressionMemoryMb: number;
  /** Expression sandbox processes per API or worker process. */
  expressionProcesses: number;
  maxStepOutputBytes: number;
  intakeCacheTtlMs: number;
  readyMaxQueueAgeMs: number;
  shutdownGraceMs: number;
  adapterWaitMs: number;
  /** Run log lines older than this are pruned (by worker processes, hourly). */
  runLogRetentionDays: number;
  /** A `worker` process serves GET /metrics on this port when it is set. */
  metricsPort: number | undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const text = (name: string, fallback: string) => (env[name]?.trim() ? env[name]!.trim() : fallback);
  const optional = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  const integer = (name: string, fallback: number, min = 0) => {
    const raw = optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`);
    return value;
  };
  const bytes = (name: string, fallback: number) => {
    const raw = optional(name);
    if (raw === undefined) return fallback;
    const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(raw);
    if (!match) throw new Error(`${name} must be a size such as 1048576, 512kb or 1mb, got "${raw}"`);
    return Number(match[1]) * ({ b: 1, kb: 1024, mb: 1024 * 1024 }[(match[2] ?? 'b').toLowerCase() as 'b'] ?? 1);
  };
  return {
    port: integer('PORT', 3000),
    host: text('HOST', '0.0.0.0'),
    publicUrl: optional('PUBLIC_URL'),
    dataDir: path.resolve(text('DATA_DIR', './data')),
    databaseUrl: optional('DATABASE_URL'),
    databaseSchema: optional('DATABASE_SCHEMA'),
    redisUrl: text('REDIS_URL', 'redis://127.0.0.1:6379'),
    redisPrefix: text('REDIS_PREFIX', 'tributary'),
    logLevel: text('LOG_LEVEL', 'info'),
    authIssuer: text('AUTH_ISSUER', 'tributary'),
    authAudience: text('AUTH_AUDIENCE', 'tributary-api'),
    authJwksUrl: optional('AUTH_JWKS_URL'),
    secretsKey: optional('SECRETS_KEY'),
    bodyLimitBytes: bytes('BODY_LIMIT', 1024 * 1024),
    // Runs mostly wait on outside systems: a worker keeps many in flight (and its store statements group them).
    workerConcurrency: integer('WORKER_CONCURRENCY', 64, 1),
    tenantConcurrency: integer('TENANT_CONCURRENCY', 0),
    workerLockMs: integer('WORKER_LOCK_MS', 30_000, 1000),
    workerStalledIntervalMs: integer('WORKER_STALLED_INTERVAL_MS', 30_000, 1000),
    nodeTimeoutMs: integer('NODE_TIMEOUT_MS', 30_000, 1),
    expressionTimeoutMs: integer('EXPRESSION_TIMEOUT_MS', 1000, 1),
    expressionMemoryMb: integer('EXPRESSION_MEMORY_MB', 128, 16),
    expressionProcesses: integer('EXPRESSION_PROCESSES', 2, 1),
    maxStepOutputBytes: bytes('MAX_STEP_OUTPUT_BYTES', 1024 * 1024),
    intakeCacheTtlMs: integer('INTAKE_CACHE_TTL_MS', 2000),
    readyMaxQueueAgeMs: integer('READY_MAX_QUEUE_AGE_MS', 120_000, 1),
    shutdownGraceMs: integer('SHUTDOWN_GRACE_MS', 10_000),
    adapterWaitMs: integer('ADAPTER_WAIT_MS', 25_000),
    runLogRetentionDays: integer('RUN_LOG_RETENTION_DAYS', 14, 1),
    metricsPort: optional('METRICS_PORT') === undefined ? undefined : integer('METRICS_PORT', 0),
  };
}

/** Where clients reach this process (printed, and the embedded issuer's JWKS location). */
export function baseUrl(config: Config, port = config.port): string {
  return config.publicUrl ?? `http://127.0.0.1:${port}`;
}
