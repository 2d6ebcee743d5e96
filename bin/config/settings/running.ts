import type { Setting } from '../setting.ts';

/** How runs are worked: locks, timeouts, the address policy, expressions, intake's cache, waits. */
export const runningSettings = {
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
  outboundStartConcurrency: {
    env: 'OUTBOUND_START_CONCURRENCY',
    schema: { type: 'integer', minimum: 1, default: 4 },
    description:
      "Requests a tenant's runs may have in flight to an outside account never seen (an origin, or a named " +
      'budget such as an ERP account) before any has been answered. The budget then grows while the account ' +
      'answers and shrinks when it refuses (429, 503, an ERP concurrency error); a run whose request finds its ' +
      'budget full waits for its turn, holding no worker slot. See docs/concepts.md.',
  },
  outboundMaxConcurrency: {
    env: 'OUTBOUND_MAX_CONCURRENCY',
    schema: { type: 'integer', minimum: 1, default: 256 },
    description:
      "The most requests a tenant's runs may have in flight to one outside account, across every worker, unless " +
      'the destination says what the account allows (`erp.limits.concurrency`).',
  },
  expressionTimeoutMs: {
    env: 'EXPRESSION_TIMEOUT_MS',
    schema: { type: 'integer', minimum: 1, default: 1000 },
    description:
      'Hard deadline of one JSONata evaluation (also bounded in depth, `EXPRESSION_MAX_DEPTH`): an expression ' +
      'evaluated in the sandbox is killed once it has used this much CPU (time spent waiting for a CPU on a busy ' +
      'machine does not count, up to ten times this on the clock), and its node fails permanently naming the limit.',
  },
  expressionMaxDepth: {
    env: 'EXPRESSION_MAX_DEPTH',
    schema: { type: 'integer', minimum: 10, maximum: 10_000, default: 300 },
    description:
      "How deep one JSONata evaluation may recurse (JSONata's own stack bound): deeper, its node fails permanently " +
      'naming the limit, before the process would run out of stack.',
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
      'Sandbox processes per API or worker process (started on first use, replaced when one is killed, at nice +10: ' +
      "the platform's own work goes first); more sandboxed evaluations wait, served by tenant in turn, so one " +
      "tenant's backlog does not hold another's.",
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
  maxRetryDelayMs: {
    env: 'MAX_RETRY_DELAY_MS',
    schema: { type: 'integer', minimum: 1000, default: 3_600_000 },
    description:
      "The longest a run waits before a node's next try, whatever the operation or the upstream's `Retry-After` asks " +
      '(a later that would wait longer waits this long and asks again).',
  },
  recoveryIntervalMs: {
    env: 'RECOVERY_INTERVAL_MS',
    schema: { type: 'integer', minimum: 100, maximum: 60_000, default: 2000 },
    description:
      'How often each worker checks that Redis still holds its keys; one that lost them (a restart without ' +
      'persistence, a failover to an empty replica) is noticed within this, and its runs are queued again from the ' +
      'store.',
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
} as const satisfies Record<string, Setting>;
