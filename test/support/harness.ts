import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { storeAdmin } from '../../bin/admin.ts';
import { clientToken } from '../../bin/tenant-api.ts';
import { loadConfig, type Config } from '../../bin/config/config.ts';
import { Platform, type Roles } from '../../bin/platform.ts';
import type { TracingEnv } from '../../bin/tracing.ts';
import { Keyring } from '../../engine/secrets/keyring.ts';
import { defineFamily, type OperationFamily } from '../../engine/plugins/families.ts';
import type { OperationDefinition } from '../../engine/plugins/operations.ts';
import { families } from '../../operations/index.ts';
import { OpenApiContract } from './openapi-contract.ts';

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type StoreKind = 'pglite' | 'postgres';

/** A fresh, isolated environment for one test file: its own schema (or data dir) and Redis prefix. */
export function isolatedConfig(kind: StoreKind, overrides: Partial<Config> = {}): Config {
  const suffix = randomBytes(5).toString('hex');
  const base = loadConfig({});
  return {
    ...base,
    port: 0,
    host: '127.0.0.1',
    dataDir: mkdtempSync(path.join(os.tmpdir(), 'tributary-test-')),
    databaseUrl: kind === 'postgres' ? POSTGRES_URL : undefined,
    databaseSchema: kind === 'postgres' ? `test_${suffix}` : undefined,
    secretsKey: Keyring.generateEntry('test'),
    redisUrl: REDIS_URL,
    redisPrefix: `test-${suffix}`,
    logLevel: 'info',
    workerStalledIntervalMs: 2000,
    // The simulated shops, ERPs and receivers listen on 127.0.0.1.
    outboundPrivateAddresses: 'allow',
    // Tests send bursts of deliveries; the quota's own tests set theirs.
    tenantDeliveriesPerSecond: 100_000,
    tenantDeliveryBurst: 100_000,
    tenantApiCallsPerSecond: 100_000,
    tenantApiCallBurst: 100_000,
    ...overrides,
  };
}

/** A logger whose lines the test can read: to prove what never reaches the logs. */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return {
    logger: pino(
      { level: 'debug', redact: { paths: ['authorization', '*.authorization'], censor: '[REDACTED]' } },
      stream,
    ),
    lines,
  };
}

export interface TestPlatform {
  platform: Platform;
  config: Config;
  lines: string[];
  url: string;
  /** Create a tenant and a client; returns an API caller bound to it. */
  tenant(id: string, scopes?: string[]): Promise<ApiClient>;
  /** Another client of an existing tenant, limited to some scopes or environments. */
  client(tenantId: string, request: { scopes?: string[]; environments?: string[] }): Promise<ApiClient>;
  operator(): Promise<ApiClient>;
  /** What /metrics shows an operator now. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/** The build's families, with `extra` operations as a family of their own and `extra` families. */
export function withExtra(extra: Array<OperationDefinition<unknown> | OperationFamily>): OperationFamily[] {
  const isFamily = (item: OperationDefinition<unknown> | OperationFamily): item is OperationFamily =>
    'operations' in item && Array.isArray(item.operations);
  const operations = extra.filter((item) => !isFamily(item)) as OperationDefinition<unknown>[];
  return [...families, ...extra.filter(isFamily), defineFamily({ name: 'test', operations })];
}

export async function startTestPlatform(
  kind: StoreKind,
  roles: Roles = { api: true, worker: true },
  overrides: Partial<Config> = {},
  /** Operations (in a family of their own) and families beside those operations/index.ts lists. */
  extra: Array<OperationDefinition<unknown> | OperationFamily> = [],
  /** The OTEL_* variables the platform reads (none: no tracing). */
  tracingEnv: TracingEnv = {},
): Promise<TestPlatform> {
  const config = isolatedConfig(kind, overrides);
  const { logger, lines } = capturingLogger();
  const platform = await Platform.start(config, roles, {
    logger,
    families: withExtra(extra),
    tracingEnv,
  });
  const admin = storeAdmin(platform.store);
  // With a PUBLIC_URL (a proxy in front), tests talk to the process directly, as the proxy would.
  const url = platform.localUrl ?? platform.url;
  const clientFor = async (
    tenantId: string | undefined,
    request: { scopes?: string[]; operator?: boolean; environments?: string[] },
  ) => {
    const credentials = await admin.createClient({ tenantId, ...request });
    const token = await getToken(url, credentials.client_id, credentials.client_secret);
    return new ApiClient(url, token, tenantId ?? '', credentials);
  };
  return {
    platform,
    config,
    lines,
    url,
    tenant: async (id, scopes) => {
      await admin.createTenant({ id });
      return clientFor(id, { scopes });
    },
    client: (tenantId, request) => clientFor(tenantId, request),
    operator: () => clientFor(undefined, { operator: true }),
    metrics: async () => {
      const { credentials } = await clientFor(undefined, { operator: true });
      const basic = Buffer.from(`${credentials.client_id}:${credentials.client_secret}`).toString('base64');
      return (await fetch(`${url}/metrics`, { headers: { authorization: `Basic ${basic}` } })).text();
    },
    close: async () => {
      await platform.close();
      await dropIsolation(config);
    },
  };
}

/**
 * A second API process on a platform's store and Redis, with other settings (a PUBLIC_URL, say); closing it drops
 * nothing.
 */
export async function startSiblingApi(
  env: TestPlatform,
  overrides: Partial<Config>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const platform = await Platform.start(
    { ...env.config, ...overrides },
    { api: true, worker: false },
    { logger: capturingLogger().logger },
  );
  return { url: platform.localUrl!, close: () => platform.close() };
}

export async function dropIsolation(config: Config) {
  rmSync(config.dataDir, { recursive: true, force: true });
  if (config.databaseSchema) {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`drop schema if exists ${config.databaseSchema} cascade`);
    await client.end();
  }
  const redis = new Redis(REDIS_URL);
  // The prefix's own keys, and those under its slots' hash tags (`{prefix:runs}`).
  for (const pattern of [`${config.redisPrefix}:*`, `{${config.redisPrefix}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  redis.disconnect();
}

/** A bearer token for a client of the platform at `url`. */
export const getToken = clientToken;

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export class ApiClient {
  constructor(
    readonly url: string,
    readonly token: string,
    readonly tenantId: string,
    readonly credentials: { client_id: string; client_secret: string },
    /** The environment header it sends (none: production). */
    readonly environment?: string,
  ) {}

  /** Call an /api route as this client (`tenant_id` defaults to the client's own tenant). */
  async call<T = any>(
    method: string,
    route: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const response = await fetch(`${this.url}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        tenant_id: this.tenantId,
        ...(this.environment ? { environment: this.environment } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const answer = {
      status: response.status,
      body: text ? JSON.parse(text) : undefined,
      headers: response.headers,
      text,
    };
    const violations = (await OpenApiContract.of(this.url)).violations(method, route, answer.status, answer.body);
    if (violations.length > 0) throw new Error(`the answer breaks /openapi.json:\n${violations.join('\n')}`);
    return answer;
  }

  as(tenantId: string) {
    return new ApiClient(this.url, this.token, tenantId, this.credentials, this.environment);
  }

  /** The same client, calling in one of its tenant's environments. */
  in(environment: string) {
    return new ApiClient(this.url, this.token, this.tenantId, this.credentials, environment);
  }

  /** The same client, calling another process. */
  at(url: string) {
    return new ApiClient(url, this.token, this.tenantId, this.credentials, this.environment);
  }

  /** Create, then publish a flow document; returns the flow id. */
  async publish(document: object): Promise<string> {
    const created = await this.call('POST', '/api/v1/editable-flows', document);
    if (created.status !== 201) throw new Error(`create failed: ${created.text}`);
    const published = await this.call('POST', `/api/v1/editable-flows/${created.body.id}/publish`);
    if (published.status !== 201) throw new Error(`publish failed: ${published.text}`);
    return created.body.id;
  }

  /** Wait until the run reaches a finished status; returns it with its steps. */
  async settledRun(runId: string): Promise<any> {
    return eventually(async () => {
      const run = await this.call('GET', `/api/v1/runs/${runId}`);
      if (
        !['succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled', 'debounced'].includes(run.body?.status)
      )
        throw new Error(`run is ${run.body?.status}`);
      return run.body;
    });
  }
}

export async function sendWebhook(
  url: string,
  tenantId: string,
  flowKey: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${url}/hooks/${tenantId}/${flowKey}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/**
 * Retry `probe` until it stops throwing. This bounds a wait for an eventual state (a run finishing
 * in a worker); it asserts nothing about speed.
 */
export async function eventually<T>(probe: () => Promise<T>, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    try {
      return await probe();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * `tributary worker` (or another worker command) as its own OS process on a platform's store and Redis; `ready`
 * resolves once it consumes.
 */
export function spawnWorker(
  config: Config,
  env: Record<string, string> = {},
  command = ['bin/tributary.js', 'worker'],
): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, command, {
    env: {
      ...process.env,
      DATABASE_URL: config.databaseUrl,
      DATABASE_SCHEMA: config.databaseSchema,
      SECRETS_KEY: config.secretsKey,
      REDIS_URL: config.redisUrl,
      REDIS_PREFIX: config.redisPrefix,
      OUTBOUND_PRIVATE_ADDRESSES: config.outboundPrivateAddresses,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('worker consuming')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}: ${output}`)));
  });
  return { child, ready };
}
