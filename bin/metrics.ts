import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeliveryOutcome, EngineMetrics } from '../engine/telemetry/index.ts';
import type { BudgetStatus } from '../engine/limits/index.ts';
import { terminalRunStatuses } from '../engine/model/index.ts';

const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed', 'paused'] as const;

/**
 * The engine's metrics as Prometheus series, with the process's own (CPU, memory, event loop).
 * Each process exports what it did; queue depths are read from Redis at scrape time, the same in
 * every process.
 */
export class PrometheusMetrics implements EngineMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly deliveries = new Counter({
    name: 'tributary_deliveries_total',
    help: 'Deliveries at flow URLs and the adapter route, by tenant and outcome (tenant "" when no flow answered).',
    labelNames: ['tenant', 'outcome'],
    registers: [this.registry],
  });
  private readonly runsFinished = new Counter({
    name: 'tributary_runs_finished_total',
    help: 'Runs that reached a final status, by tenant and status.',
    labelNames: ['tenant', 'status'],
    registers: [this.registry],
  });
  private readonly attemptSeconds = new Histogram({
    name: 'tributary_run_attempt_seconds',
    help: 'How long one pass of a run took, by what it ended in (a final status, wait, gone or error).',
    labelNames: ['status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  private readonly stalled = new Counter({
    name: 'tributary_jobs_stalled_total',
    help: 'Jobs whose lock expired (their worker died or hung) and were taken back to run again, by queue.',
    labelNames: ['queue'],
    registers: [this.registry],
  });
  private readonly terminal = new Set<string>(terminalRunStatuses);

  constructor(
    queues: Queue[],
    perTenant: {
      backlog: () => Promise<Record<string, number>>;
      deliveryQuotaLeft: () => Promise<Record<string, number>>;
      /** Held runs per tenant, from the store. */
      held: () => Promise<Record<string, { runs: number; oldestSeconds: number }>>;
      /** The outbound budgets used lately, from Redis. */
      budgets: () => Promise<BudgetStatus[]>;
      /** Runs waiting for a concurrency key or a debounce period, from Redis. */
      keyedWaiting: () => Promise<Array<{ tenantId: string; kind: string; runs: number }>>;
    },
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'tributary_' });
    // Gauges named like counters, which Prometheus' linter refuses; the same counts are there by type
    // (`tributary_nodejs_active_handles{type}`, ...).
    for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
      this.registry.removeSingleMetric(`tributary_nodejs_${name}`);
    this.perTenantGauge(
      'tributary_tenant_backlog_runs',
      "Runs waiting in a tenant's lanes for their turn (tenants with none are left out).",
      perTenant.backlog,
    );
    this.perTenantGauge(
      'tributary_tenant_delivery_quota_available',
      "Deliveries a tenant's flow URLs would accept at once now (tenants that never sent are left out).",
      perTenant.deliveryQuotaLeft,
    );
    // Both gauges of held runs come from one query per scrape: a scrape collects every metric at once.
    const held = once(perTenant.held);
    this.perTenantGauge(
      'tributary_tenant_held_runs',
      'Runs held, not queued (the tenant suspended or the topic blocked), per tenant (tenants with none left out).',
      async () => Object.fromEntries(Object.entries(await held()).map(([tenant, { runs }]) => [tenant, runs])),
    );
    this.perTenantGauge(
      'tributary_tenant_held_oldest_seconds',
      "How long a tenant's oldest held run has waited, in seconds.",
      async () =>
        Object.fromEntries(Object.entries(await held()).map(([tenant, { oldestSeconds }]) => [tenant, oldestSeconds])),
    );
    const budgets = once(perTenant.budgets);
    const budgetGauge = (name: string, help: string, value: (status: BudgetStatus) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['tenant', 'budget'],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const status of await budgets())
            this.set({ tenant: status.tenantId, budget: status.budget }, value(status));
        },
      });
    budgetGauge(
      'tributary_outbound_budget_limit',
      "Requests a tenant's runs may have in flight to an outside account now (its budget's window, as learned).",
      (status) => status.limit,
    );
    budgetGauge(
      'tributary_outbound_budget_in_flight',
      "Requests of a tenant's runs in flight to an outside account.",
      (status) => status.inFlight,
    );
    budgetGauge(
      'tributary_outbound_budget_waiting_runs',
      "Runs waiting for their turn on an outside account's budget.",
      (status) => status.waiting,
    );
    const { keyedWaiting } = perTenant;
    new Gauge({
      name: 'tributary_runs_waiting_for_key',
      help:
        'Runs waiting in line for a concurrency key (kind concurrency_key) or for their debounce period to pass ' +
        '(kind debounce), per tenant (tenants with none left out).',
      labelNames: ['tenant', 'kind'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { tenantId, kind, runs } of await keyedWaiting()) this.set({ tenant: tenantId, kind }, runs);
      },
    });
    new Gauge({
      name: 'tributary_queue_jobs',
      help: 'Jobs per queue and state.',
      labelNames: ['queue', 'state'],
      registers: [this.registry],
      async collect() {
        for (const queue of queues) {
          const counts = await queue.getJobCounts(...JOB_STATES);
          for (const state of JOB_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
        }
      },
    });
  }

  /** A gauge by tenant read from Redis at scrape time: only the tenants `read` names have a series. */
  private perTenantGauge(name: string, help: string, read: () => Promise<Record<string, number>>) {
    new Gauge({
      name,
      help,
      labelNames: ['tenant'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [tenant, value] of Object.entries(await read())) this.set({ tenant }, value);
      },
    });
  }

  delivery(tenantId: string, outcome: DeliveryOutcome) {
    // A URL that names no flow may name no tenant either: never a label from unchecked input.
    this.deliveries.inc({ tenant: outcome === 'no-flow' ? '' : tenantId, outcome });
  }

  runAttempt(tenantId: string, status: string, seconds: number) {
    this.attemptSeconds.observe({ status }, seconds);
    if (this.terminal.has(status)) this.runsFinished.inc({ tenant: tenantId, status });
  }

  jobStalled(queue: string) {
    this.stalled.inc({ queue });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** `read`, shared by the calls made while one is under way: the gauges of one scrape read it once. */
function once<T>(read: () => Promise<T>): () => Promise<T> {
  let reading: Promise<T> | undefined;
  return () => {
    reading ??= read().finally(() => {
      reading = undefined;
    });
    return reading;
  };
}
