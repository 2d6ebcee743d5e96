import type { Statistics, StatisticsRequest, StatisticsStore } from '../../port.ts';
import { idAt } from '../../../model/index.ts';
import type { SqlDriver } from '../driver.ts';
import { iso, isoOrNull, isUuid } from './rows.ts';

/** Counts per time bucket and per flow. */
export class SqlStatistics implements StatisticsStore {
  constructor(private readonly db: SqlDriver) {}

  async statistics(tenantId: string, request: StatisticsRequest): Promise<Statistics> {
    if (request.flowId !== undefined && !isUuid(request.flowId)) return { ...request, runs: [], messages: [] };
    // Ids are time-ordered: a bound a minute wider than the range lets the primary key find the rows.
    const from = Date.parse(request.from);
    const to = Date.parse(request.to);
    const range = [tenantId, request.interval, request.from, request.to, idAt(from - 60_000), idAt(to + 60_000)];
    const percentilesOf = (values: number[] | null) =>
      values ? { p50: values[0], p95: values[1], p99: values[2] } : null;
    const [runs, messages] = await Promise.all([
      this.db.query(
        `select bucket, flow_id, jsonb_object_agg(status, n) filter (where status is not null) as counts, sum(n) as
          total,
                max(duration) as duration, max(latency) as latency
           from (
             select date_trunc($2, created_at, 'UTC') as bucket, flow_id, status, count(*) as n, null::float8[] as
               duration, null::float8[] as latency
               from runs where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and created_at >= $3
                 and created_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
               group by 1, 2, 3
             union all
             select date_trunc($2, created_at, 'UTC'), flow_id, null, 0,
                    percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from finished_at -
                      coalesce(started_at, created_at)) * 1000),
                    percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch
                      from finished_at - created_at) * 1000)
               from runs where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and created_at >= $3
                 and created_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
                 and finished_at is not null
               group by 1, 2
           ) parts
          group by bucket, flow_id order by bucket, flow_id`,
        [...range, request.flowId ?? null],
      ),
      this.db.query(
        `select date_trunc($2, received_at, 'UTC') as bucket, topic, count(*) filter (where duplicate_of is null) as
          count, count(*) filter (where duplicate_of is not null) as duplicates
           from messages where tenant_id = $1 and id >= $5::uuid and id < $6::uuid and received_at >= $3
             and received_at < $4 and ($7::uuid is null or flow_id = $7::uuid)
          group by 1, 2 order by 1, 2`,
        [...range, request.flowId ?? null],
      ),
    ]);
    return {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      interval: request.interval,
      runs: runs.map((r) => ({
        bucket: iso(r.bucket),
        flowId: r.flow_id,
        total: Number(r.total),
        counts: Object.fromEntries(
          Object.entries(r.counts as Record<string, unknown>).map(([status, n]) => [status, Number(n)]),
        ),
        durationMs: percentilesOf(r.duration),
        latencyMs: percentilesOf(r.latency),
      })),
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
