import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Readiness } from '../api/app.ts';
import { inspectQueue } from '../engine/background/index.ts';
import type { MaintenanceMode } from '../engine/limits/index.ts';
import type { RunQueue } from '../engine/queue/index.ts';
import type { Store } from '../engine/store/index.ts';
import type { Config } from './config/config.ts';

/**
 * Whether this process can serve: the store and Redis answer, Redis keeps its keys, and this
 * process's event loop is not held up. What the queue looks like (live workers, the oldest job
 * waiting for a worker, a recovery from lost Redis data, maintenance) is reported, not judged: a
 * tenant's backlog or a stopped worker must not take every API host out of a load balancer.
 */
export async function readiness(
  store: Store,
  queue: RunQueue,
  maintenance: MaintenanceMode,
  eventLoop: EventLoopLag,
  config: Config,
  logger: Logger,
): Promise<Readiness> {
  const checks: Record<string, unknown> = {};
  const failed: string[] = [];
  const problems: string[] = [];
  try {
    await store.ping();
    checks.store = 'ok';
  } catch (error) {
    // The driver's message (host, user, database) goes to the log, for operators, never into the answer.
    logger.warn({ err: error }, 'readiness: the store does not answer');
    checks.store = 'unreachable';
    failed.push('store');
    problems.push('the store does not answer');
  }
  try {
    const report = await inspectQueue(queue.queues, config.redisPrefix);
    Object.assign(checks, report);
    const current = await maintenance.current();
    if (current) checks.maintenance = current;
    if (report.cluster && report.cluster.state !== 'ok') {
      failed.push('redis cluster');
      problems.push(`the Redis Cluster's state is ${report.cluster.state}: some slots have no master`);
    }
    if (/^(allkeys|volatile)-/.test(report.maxmemoryPolicy)) {
      failed.push('redis eviction');
      problems.push(`Redis evicts keys (maxmemory-policy ${report.maxmemoryPolicy}); BullMQ needs noeviction`);
    }
  } catch (error) {
    logger.warn({ err: error }, 'readiness: Redis does not answer');
    checks.redis = 'unreachable';
    failed.push('redis');
    problems.push('Redis does not answer');
  }
  checks.eventLoopLagMs = eventLoop.p99Ms;
  if (eventLoop.p99Ms > config.readyMaxEventLoopLagMs) {
    failed.push('event loop');
    problems.push(`this process's event loop lags ${eventLoop.p99Ms} ms (p99 over the last few seconds)`);
  }
  if (problems.length > 0) checks.problems = problems;
  return { ready: failed.length === 0, failed, checks };
}

/** The p99 delay of this process's event loop over the last window of a few seconds. */
export class EventLoopLag {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  p99Ms = 0;

  constructor(windowMs = 5000) {
    this.histogram.enable();
    this.timer = setInterval(() => {
      this.p99Ms = Math.round(this.histogram.percentile(99) / 1e6);
      this.histogram.reset();
    }, windowMs).unref();
  }

  close() {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
