import type { Setting } from '../setting.ts';

/** Where this process listens and what it connects to: HTTP, the store, Redis, auth, secrets, logs. */
export const serverSettings = {
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
} as const satisfies Record<string, Setting>;
