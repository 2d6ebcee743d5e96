import { MB, type Setting, stateLimit } from '../setting.ts';

/** How work is shared between tenants and what each may send and keep. */
export const tenantsSettings = {
  workerConcurrency: {
    env: 'WORKER_CONCURRENCY',
    schema: { type: 'integer', minimum: 1 },
    shownDefault: '`128` in a worker process of its own, `64` in one that also serves the API (`serve`)',
    description:
      'Runs one worker process executes at once. Runs mostly wait on outside systems, so a worker keeps many in ' +
      'flight; their store statements are grouped, so more in flight also costs less CPU per run (on two cores, a ' +
      'worker of its own drained 827-998 runs/s at 128, 764-835 at 64 and 988-1,092 at 256, 2026-11-30). Where the ' +
      'worker shares its process with the API, more runs in flight take the CPU the flow URLs answer with: `serve` ' +
      "took 30 % fewer webhooks a second at 128 under load, hence 64 there. An outside system's own limit (an ERP " +
      "account allows 5–20 concurrent requests) is not this setting's job: see `TENANT_CONCURRENCY`, and the ERP's " +
      'refusal is retried.',
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
      'the unreserved slots with none queued ahead (on the engine benchmark at 10, 0.60-0.73 of a hand-written ' +
      'BullMQ worker against 0.81-0.90 at 0, where the workers take a few runs ahead). `0` turns it off (a ' +
      'deployment with one tenant).',
  },
  runGroups: {
    env: 'RUN_GROUPS',
    schema: { type: 'integer', minimum: 1, maximum: 64, default: 1 },
    description:
      "Slot groups of the run path in Redis: each is a run queue with its tenants' lanes, leases and limits, in a " +
      "hash slot of its own, so on a Redis Cluster the run traffic spreads over as many masters. A tenant's runs go " +
      'through one group (by a stable hash of its id, or `RUN_GROUP_TENANTS`), its fair share and limits holding ' +
      'there; workers serve every group, their slots shared between groups by the tenants waiting in each. Every ' +
      'process of a deployment must have the same value; see docs/deployment.md before changing it.',
  },
  runGroupTenants: {
    env: 'RUN_GROUP_TENANTS',
    schema: { type: 'string', pattern: '^\\s*([^\\s=,]+\\s*=\\s*\\d+\\s*(,\\s*|$))*$' },
    shownDefault: 'none',
    description:
      "Tenants placed in a group of their own choosing instead of their hash's, e.g. `big-shop=2, acme=1` (groups " +
      'count from 0; a group past `RUN_GROUPS` is ignored): a tenant heavy enough to fill a master alone gets one. ' +
      'A tenant an operator moved while it runs (`PUT /api/v1/platform/run-groups/tenants/{tenantId}`) goes where it ' +
      'was moved, whatever this says.',
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
} as const satisfies Record<string, Setting>;
