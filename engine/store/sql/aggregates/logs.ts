import type { PageRequest, RunLogFilter, LogStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { isUuid, decodeCursor, page, SEVERITY } from './rows.ts';
import { toRunLog } from './row-mappers.ts';

/** What operations logged during runs. */
export class SqlLogs implements LogStore {
  constructor(private readonly db: SqlDriver) {}

  async listRunLogs(tenantId: string, filter: RunLogFilter, request: PageRequest) {
    if (
      (filter.flowId !== undefined && !isUuid(filter.flowId)) ||
      (filter.runId !== undefined && !isUuid(filter.runId))
    ) {
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    }
    const rows = await this.db.query(
      `select * from run_logs where tenant_id = $1 and ($2::uuid is null or flow_id = $2::uuid) and ($3::uuid is null
        or run_id = $3::uuid)
          and severity >= ${SEVERITY("coalesce($4, 'info')")} and ($5::timestamptz is null
            or logged_at >= $5::timestamptz) and ($6::timestamptz is null or logged_at < $6::timestamptz)
          and ($7::text is null or strpos(lower(message), lower($7)) > 0) and ($8::bigint is null or seq < $8::bigint)
        order by seq desc limit $9`,
      [
        tenantId,
        filter.flowId ?? null,
        filter.runId ?? null,
        filter.level ?? null,
        filter.from ?? null,
        filter.to ?? null,
        filter.text ?? null,
        decodeCursor(request.after, /^\d{1,19}$/),
        request.first + 1,
      ],
    );
    return page(rows, request, toRunLog, (r) => String(r.seq));
  }

  async pruneRunLogs(before: string) {
    const [row] = await this.db.query(
      'with gone as (delete from run_logs where logged_at < $1 returning 1) select count(*) as n from gone',
      [before],
    );
    return Number(row.n);
  }
}
