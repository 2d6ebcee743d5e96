import type { Setting } from '../setting.ts';

/** How long history is kept, alerts, and the process itself (metrics, build, shutdown). */
export const keepingSettings = {
  runLogRetentionDays: {
    env: 'RUN_LOG_RETENTION_DAYS',
    schema: { type: 'integer', minimum: 1, default: 14 },
    description:
      'Run log lines (the Logs API) and alerts sent (`GET /api/v1/alerts`) older than this are pruned by worker ' +
      'processes, every `PRUNE_INTERVAL_MS`.',
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
  recordExchanges: {
    env: 'RECORD_EXCHANGES',
    schema: { type: 'string', enum: ['all', 'none'], default: 'all' },
    description:
      '`all`: a step keeps the requests its operation sent and their answers (credentials and secrets masked, at most ' +
      '20, bodies cut at 64 KiB), which a test recorded from the run replays (decision 29); about 480 bytes for a ' +
      'small JSON POST, kept as long as the step. `none`: steps keep none, and tests cannot be recorded from runs.',
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
  alertLinkSeconds: {
    env: 'ALERT_LINK_SECONDS',
    schema: { type: 'integer', minimum: 60, maximum: 604_800, default: 86_400 },
    description:
      "How long the run link in an alert opens the run's page (read-only: it goes to a chat or a pager, not to a " +
      'client).',
  },
  pruneIntervalMs: {
    env: 'PRUNE_INTERVAL_MS',
    schema: { type: 'integer', minimum: 60_000, default: 3_600_000 },
    description:
      'How often each worker makes the partitions of the week ahead and drops or deletes what is past its ' +
      'retention (a second sweep finds nothing left to do).',
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
