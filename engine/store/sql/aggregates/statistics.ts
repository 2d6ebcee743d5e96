import type { Statistics, StatisticsRequest, StatisticsStore } from '../../port.ts';
import { idAt } from '../../../model/index.ts';
import type { SqlDriver } from '../driver.ts';
import { GENERIC, OPEN, type Row, andSet, iso, isoOrNull, isUuid } from './rows.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The milliseconds a histogram bucket of run_timings stands for (migration 19): 0 below 1 ms, else the middle of
 * [2^((b-1)/8), 2^(b/8)) on a log scale, within 4.5 % of any value in it.
 */
const bucketMs = (bucket: number) => (bucket === 0 ? 0 : Math.round(2 ** ((bucket - 0.5) / 8) * 10) / 10);

/** The `share` percentile of a histogram: the first bucket whose running total reaches that share of the runs. */
function percentile(histogram: { buckets: number[]; counts: number[] }, share: number): number {
  const total = histogram.counts.reduce((sum, n) => sum + n, 0);
  let below = 0;
  for (let i = 0; i < histogram.buckets.length; i++) {
    below += histogram.counts[i];
    if (below >= share * total) return bucketMs(histogram.buckets[i]);
  }
  return bucketMs(histogram.buckets[histogram.buckets.length - 1]);
}

/** Counts per time bucket and per flow. */
export class SqlStatistics implements StatisticsStore {
  constructor(private readonly db: SqlDriver) {}

  async statistics(tenantId: string, request: StatisticsRequest): Promise<Statistics> {
    // Rollups count by the hour and the day: the range widens to whole buckets, and says so in the answer.
    const unit = request.interval === 'day' ? DAY_MS : HOUR_MS;
    const from = Math.floor(Date.parse(request.from) / unit) * unit;
    const to = Math.ceil(Date.parse(request.to) / unit) * unit;
    const answer = { from: new Date(from).toISOString(), to: new Date(to).toISOString(), interval: request.interval };
    if (request.flowId !== undefined && !isUuid(request.flowId)) return { ...answer, runs: [], messages: [] };
    const range = [tenantId, request.interval, answer.from, answer.to];
    // Ids are time-ordered: a bound a minute wider than the range lets an index find the unfinished runs.
    const countParams = [...range, idAt(from - 60_000), idAt(to + 60_000)];
    const timingParams = [tenantId, request.interval === 'day' ? 'd' : 'h', answer.from, answer.to];
    const messageParams = [...range];
    // The flow's condition, its value appended to each statement's own parameters.
    const ofFlow = (params: unknown[]) => andSet(params, [[(p) => `flow_id = ${p}::uuid`, request.flowId]]);
    const [counts, timings, messages] = await Promise.all([
      this.db.query(
        `select bucket, flow_id, jsonb_object_agg(status, n) as counts, sum(n) as total from (
           select date_trunc($2, hour, 'UTC') as bucket, flow_id, status, sum(runs) as n from run_counts
            where tenant_id = $1 and hour >= $3 and hour < $4 ${ofFlow(countParams)}
            group by 1, 2, 3
           union all
           select date_trunc($2, created_at, 'UTC'), flow_id, status, count(*) from runs
            where tenant_id = $1 and status in ${OPEN} and id >= $5::uuid and id < $6::uuid and created_at >= $3
              and created_at < $4 ${ofFlow(countParams)}
            group by 1, 2, 3
         ) c group by bucket, flow_id order by bucket, flow_id`,
        countParams,
        GENERIC,
      ),
      this.db.query(
        // One histogram per bucket, flow and measure: the span's periods are the interval's buckets.
        `select period as bucket, flow_id, measure, array_agg(bucket order by bucket) as buckets,
                array_agg(runs::int order by bucket) as counts
           from run_timings where tenant_id = $1 and span = $2 and period >= $3 and period < $4 ${ofFlow(timingParams)}
          group by period, flow_id, measure`,
        timingParams,
        GENERIC,
      ),
      this.db.query(
        `select date_trunc($2, hour, 'UTC') as bucket, topic, sum(messages) as count, sum(duplicates) as duplicates
           from message_counts where tenant_id = $1 and hour >= $3 and hour < $4 ${ofFlow(messageParams)}
          group by 1, 2 order by 1, 2 nulls first`,
        messageParams,
        GENERIC,
      ),
    ]);
    const percentiles = new Map<string, { buckets: number[]; counts: number[] }>();
    for (const row of timings)
      percentiles.set(
        `${iso(row.bucket)} ${row.flow_id} ${row.measure}`,
        row as Row & {
          buckets: number[];
          counts: number[];
        },
      );
    const percentilesOf = (bucket: string, flowId: string, measure: 'd' | 'l') => {
      const row = percentiles.get(`${bucket} ${flowId} ${measure}`);
      return row ? { p50: percentile(row, 0.5), p95: percentile(row, 0.95), p99: percentile(row, 0.99) } : null;
    };
    return {
      ...answer,
      runs: counts.map((r) => {
        const bucket = iso(r.bucket);
        return {
          bucket,
          flowId: r.flow_id,
          total: Number(r.total),
          counts: Object.fromEntries(
            Object.entries(r.counts as Record<string, unknown>).map(([status, n]) => [status, Number(n)]),
          ),
          durationMs: percentilesOf(bucket, r.flow_id, 'd'),
          latencyMs: percentilesOf(bucket, r.flow_id, 'l'),
        };
      }),
      messages: messages.map((r) => ({
        bucket: iso(r.bucket),
        topic: r.topic,
        count: Number(r.count),
        duplicates: Number(r.duplicates),
      })),
    };
  }

  async flowHealth(tenantId: string) {
    const rows = await this.db.query(
      `select f.id, f.name, f.active, r.id as run_id, r.error, r.finished_at from flows f
         left join lateral (select id, error, finished_at from runs where tenant_id = f.tenant_id and flow_id = f.id
           and status = 'failed' order by id desc limit 1) r on true
        where f.tenant_id = $1 order by f.name`,
      [tenantId],
      GENERIC,
    );
    return {
      activeFlows: rows.filter((r) => r.active).length,
      lastErrors: rows
        .filter((r) => r.run_id)
        .map((r) => ({
          flowId: r.id,
          flowName: r.name,
          runId: r.run_id,
          error: r.error,
          finishedAt: isoOrNull(r.finished_at),
        })),
    };
  }
}
