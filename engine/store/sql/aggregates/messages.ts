import { isLargeJson, JsonText, ConflictError, NotFoundError, idAt, idTime } from '../../../model/index.ts';
import {
  isTerminal,
  messageStatuses,
  runStatuses,
  type AcceptedMessage,
  type HeldFilter,
  type MessageFilter,
  type NewMessage,
  type PageRequest,
  type Backlog,
  type MessageStore,
} from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import {
  OPEN,
  iso,
  json,
  UUID,
  isUuid,
  decodeCursor,
  page,
  andSet,
  GENERIC,
  MESSAGE_INFO,
  messagesOfStatus,
  replayLatestRuns,
  TERMINAL,
  UTC_TODAY,
} from './rows.ts';
import { toMessageInfo, toBlockedTopic, toRun } from './row-mappers.ts';

/** Whether message `i` is of its flow's active version. */
const LIVE = (i: string) => `exists (select 1 from flows f where f.tenant_id = ${i}.tenant_id and f.id = ${i}.flow_id
  and f.active and f.active_version = ${i}.flow_version)`;

/**
 * The input's deliveries not seen before (within DELIVERY_RECOGNITION_DAYS), of flows' active versions (live):
 * recorded, each id once.
 */
const FIRST_DELIVERIES = `insert into deliveries (tenant_id, flow_id, delivery_id, day, message_id)
  select tenant_id, flow_id, delivery_id, ${UTC_TODAY}, id from input i where delivery_id is not null and ${LIVE('i')}
   order by id -- the first of a batch's repeats is the one recorded
  on conflict do nothing returning message_id`;

/** Inbound messages, their views, replays and retries, blocked topics and held runs. */
export class SqlMessages implements MessageStore {
  constructor(private readonly db: SqlDriver) {}

  async acceptMessages(
    batch: Array<{ message: NewMessage; runId: string }>,
  ): Promise<Array<AcceptedMessage | undefined>> {
    // A body that came as JSON text goes into the statement's JSON as it is: never parsed in this process.
    let large = false;
    const rows = batch.map(({ message, runId }) => {
      large ||= isLargeJson(message.body);
      const body = message.body instanceof JsonText ? message.body.text : JSON.stringify(message.body ?? null);
      const fields = JSON.stringify({
        tenant_id: message.tenantId,
        id: message.id,
        flow_id: message.flowId,
        flow_version: message.flowVersion,
        delivery_id: message.deliveryId,
        topic: message.topic,
        headers: message.headers,
        query: message.query,
        run_id: runId,
        parent_run_id: message.parent?.runId ?? null,
        call_depth: message.parent?.depth ?? 0,
        traceparent: message.traceparent ?? null,
        concurrency: message.concurrency ?? null,
        debounce: message.debounce ?? null,
      });
      return `{"body":${body},${fields.slice(1)}`;
    });
    // One statement for the whole batch: messages and their runs are written together or not at all.
    // The rows that hold a run are read FOR SHARE: a resume or an unblock waits for this statement,
    // so the runs it holds are there for the release that follows. Only messages of a flow's active
    // version are recorded (LIVE): once a deactivate, delete or publish has returned, no process
    // accepts for the version it replaced, whatever that process had cached.
    const inserted = await this.db.query(
      `with input as (
         select * from jsonb_to_recordset($1::jsonb) as x(tenant_id text, id uuid, flow_id uuid, flow_version integer,
           delivery_id text, topic text, body jsonb, headers jsonb, query jsonb, run_id uuid, parent_run_id uuid,
           call_depth integer, traceparent text, concurrency jsonb, debounce jsonb)
       ), suspended as (
         select id from tenants where id in (select tenant_id from input) and status = 'suspended' for share
       ), blocked as (
         select tenant_id, topic from blocked_topics where (tenant_id, topic) in (select tenant_id, topic
           from input) for share
       ), keeps as (
         select tenant_id, keep_days(tenant_id) as days from (select distinct tenant_id from input) tenants
       ), first_deliveries as (
         ${FIRST_DELIVERIES}
       ), m as (
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, topic, body, headers, query,
           traceparent, keep_days)
         select i.tenant_id, i.id, i.flow_id, i.flow_version, i.delivery_id, i.topic, coalesce(i.body, 'null'::jsonb),
           i.headers, i.query, i.traceparent, k.days
           from input i join keeps k on k.tenant_id = i.tenant_id
          where ${LIVE('i')} and (i.delivery_id is null or i.id in (select message_id from first_deliveries))
         returning tenant_id, id, keep_days
       )
       insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, held_by, parent_run_id, call_depth,
         keep_days, concurrency, debounce)
       select i.tenant_id, i.run_id, i.flow_id, i.flow_version, i.id, case when hold.reason is null then 'queued'
         else 'held' end, hold.reason, i.parent_run_id, i.call_depth, m.keep_days, i.concurrency, i.debounce
         from input i join m on m.tenant_id = i.tenant_id and m.id = i.id
         cross join lateral (select case when exists (select 1 from suspended s where s.id = i.tenant_id)
           then 'suspended'
           when exists (select 1 from blocked b where b.tenant_id = i.tenant_id and b.topic = i.topic)
             then 'topic' end as reason) hold
       returning *`,
      [`[${rows.join(',')}]`],
      { large },
    );
    const byMessage = new Map(inserted.map((row) => [row.message_id as string, toRun(row)]));
    const results: Array<AcceptedMessage | undefined> = [];
    for (const { message } of batch) {
      const run = byMessage.get(message.id);
      if (run) results.push({ duplicate: false, messageId: message.id, run });
      else results.push(message.deliveryId === null ? undefined : await this.recordDuplicate(message));
    }
    return results;
  }

  /**
   * Record a repeated delivery (without its body) and return the first one's run, whether or not its
   * flow is still active (the same delivery, the same answer); nothing when there was no first.
   */
  private async recordDuplicate(message: NewMessage): Promise<AcceptedMessage | undefined> {
    const [first] = await this.db.query(
      `with first as (
         select r.* from deliveries d join runs r on r.tenant_id = d.tenant_id and r.message_id = d.message_id
          where d.tenant_id = $1 and d.flow_id = $2 and d.delivery_id = $3
          order by r.id limit 1
       ), recorded as (
         insert into messages (tenant_id, id, flow_id, flow_version, topic, body, headers, query, duplicate_of,
           keep_days)
         select $1, $4, $2, flow_version, $5, 'null'::jsonb, $6::jsonb, $7::jsonb, message_id, keep_days($1) from first
       )
       select * from first`,
      [
        message.tenantId,
        message.flowId,
        message.deliveryId,
        message.id,
        message.topic,
        json(message.headers),
        json(message.query),
      ],
    );
    return first && { duplicate: true, messageId: first.message_id, run: toRun(first) };
  }

  async listMessages(tenantId: string, filter: MessageFilter, request: PageRequest, bodyCapBytes: number) {
    if (filter.flowId !== undefined && !isUuid(filter.flowId))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    // Ids are time-ordered: a range of arrival bounds the ids too (a minute wider: an id is made before its row).
    const idAfter = filter.receivedFrom ? idAt(Date.parse(filter.receivedFrom) - 60_000) : null;
    const idBefore = filter.receivedTo ? idAt(Date.parse(filter.receivedTo) + 60_000) : null;
    const { status } = filter;
    const params: unknown[] = [tenantId, bodyCapBytes, request.first + 1];
    const conditions = andSet(params, [
      [(p) => `flow_id = ${p}::uuid`, filter.flowId],
      [(p) => `status = ${p}`, status],
      [(p) => `topic = ${p}`, filter.topic],
      [(p) => `received_at >= ${p}::timestamptz`, filter.receivedFrom],
      [(p) => `received_at < ${p}::timestamptz`, filter.receivedTo],
      [(p) => `id >= ${p}::uuid`, idAfter],
      [(p) => `id < ${p}::uuid`, idBefore],
      [(p) => `id < ${p}::uuid`, decodeCursor(request.after, UUID)],
    ]);
    const rows = await this.db.query(
      `${status === undefined || status === 'duplicate' ? MESSAGE_INFO : messagesOfStatus(status)}
        where true ${status === 'duplicate' ? 'and duplicate_of is not null' : ''} ${conditions}
        order by id desc limit $3`,
      params,
      GENERIC,
    );
    return page(rows, request, toMessageInfo, (r) => r.id);
  }

  async getMessage(tenantId: string, id: string, bodyCapBytes: number) {
    if (!isUuid(id)) return undefined;
    // Both planned once: planned for each call, each was planned over every week's partition each time (2-4 ms).
    const [row] = await this.db.query(`${MESSAGE_INFO} where id = $3`, [tenantId, bodyCapBytes, id], GENERIC);
    if (!row) return undefined;
    // Its runs were made after it (ids are time-ordered): the bound leaves the weeks before it out as they are read.
    const first = row.duplicate_of ?? id;
    const runs = await this.db.query(
      'select * from runs where tenant_id = $1 and message_id = $2 and id >= $3::uuid order by id',
      [tenantId, first, idAt(idTime(first) - 60_000)],
      GENERIC,
    );
    return { message: toMessageInfo(row), runs: runs.map(toRun) };
  }

  async replayMessage(tenantId: string, messageId: string, runId: string, redoCompletedSteps = false) {
    if (!isUuid(messageId)) throw new NotFoundError(`no message ${messageId}`);
    // The latest run is locked, and taken only while it is still the latest and finished: of two replays at once,
    // the second waits, then finds it superseded and starts nothing.
    const [row] = await this.db.query(
      `with picked as (
         select tenant_id, id as old_run, message_id, flow_id, parent_run_id, call_depth, $3::uuid as run_id
           from runs where tenant_id = $1 and message_id = $2 and not superseded and batch_id is null
            and status in ${TERMINAL}
         for update
       ), ${replayLatestRuns('picked', '$4::boolean')}
       select * from inserted`,
      [tenantId, messageId, runId, redoCompletedSteps],
    );
    if (row) return toRun(row);
    const found = await this.getMessage(tenantId, messageId, 0);
    if (!found) throw new NotFoundError(`no message ${messageId}`);
    const { message, runs } = found;
    if (message.duplicateOf)
      throw new ConflictError(`the message is a repeated delivery: replay the first one, ${message.duplicateOf}`);
    if (runs.some((run) => run.batchId !== null))
      throw new ConflictError("the message is a batch item: retry its batch's failed tasks instead");
    const latest = runs[runs.length - 1];
    if (latest && !isTerminal(latest.status))
      throw new ConflictError(
        `its run ${latest.id} is ${latest.status}; ` +
          `${latest.status === 'held' ? 'release it' : 'wait for it to finish'}`,
      );
    throw new ConflictError("the message's flow has no active version");
  }

  async backlog(tenantId: string, since: string): Promise<Backlog> {
    // Finished runs and messages are counted by the hour (run_counts, message_outcomes): `since` starts its hour.
    const hour = Math.floor(Date.parse(since) / 3_600_000) * 3_600_000;
    const floor = idAt(hour);
    const [row] = await this.db.query(
      `select
         (select coalesce(jsonb_object_agg(status, n), '{}') from (
            select status, count(*) as n from runs where tenant_id = $1 and status in ${OPEN} group by status
            union all
            select status, sum(runs) from run_counts where tenant_id = $1 and span = 'h' and period >= $3
             group by status) c) as runs,
         (select coalesce(jsonb_object_agg(status, n), '{}') from (
            select status, sum(n) as n from (
              select status, messages as n from message_outcomes where tenant_id = $1 and hour >= $3
              union all
              select 'duplicate', duplicates from message_counts where tenant_id = $1 and span = 'h' and period >= $3
              union all
              -- A message whose latest run is unfinished: its run is its latest (none is made beside an open one).
              select case status when 'held' then 'blocked' when 'queued' then 'accepted' else 'running' end, 1
                from runs where tenant_id = $1 and status in ${OPEN} and message_id >= $2::uuid) o
             group by status) c) as messages,
         (select to_jsonb(o) from (
            select id as "runId", flow_id as "flowId", status, created_at as "createdAt" from (
              (select * from runs where tenant_id = $1 and status = 'queued' order by id limit 1)
              union all (select * from runs where tenant_id = $1 and status = 'waiting' order by id limit 1)) w
            order by id limit 1) o) as oldest`,
      [tenantId, floor, new Date(hour).toISOString()],
    );
    const count = <K extends string>(keys: readonly K[], counts: Record<string, unknown>) =>
      Object.fromEntries(keys.map((key) => [key, Number(counts[key] ?? 0)])) as Record<K, number>;
    const oldest = row.oldest as {
      runId: string;
      flowId: string;
      status: 'queued' | 'waiting';
      createdAt: string;
    } | null;
    return {
      since: new Date(hour).toISOString(),
      runs: count(runStatuses, row.runs),
      messages: count(messageStatuses, row.messages),
      oldestWaiting: oldest && {
        ...oldest,
        createdAt: iso(oldest.createdAt),
        ageMs: Math.max(0, Date.now() - Date.parse(oldest.createdAt)),
      },
    };
  }

  async retryFailedRuns(tenantId: string, flowId: string, newId: () => string, limit: number) {
    if (!isUuid(flowId)) return { runs: [], more: false };
    // Messages of the flow whose latest run failed (runs_latest_by_status; not batch items: those have their own
    // retry).
    const failed = await this.db.query(
      `select r.message_id as id from runs r
        where r.tenant_id = $1 and r.status = 'failed' and not r.superseded and r.flow_id = $2 and r.batch_id is null
        order by r.message_id limit $3`,
      [tenantId, flowId, limit + 1],
    );
    const input = failed.slice(0, limit).map((row) => ({ message_id: row.id, run_id: newId() }));
    // Each latest run still failed, locked (another retry or replay taking it meanwhile is skipped).
    const inserted =
      input.length === 0
        ? []
        : await this.db.query(
            `with picked as (
               select r.tenant_id, r.id as old_run, r.message_id, r.flow_id, r.parent_run_id, r.call_depth, i.run_id
                 from jsonb_to_recordset($3::jsonb) as i(message_id uuid, run_id uuid)
                 join runs r on r.tenant_id = $1 and r.message_id = i.message_id and not r.superseded
                  and r.status = 'failed' and r.flow_id = $2 and r.batch_id is null
               for update of r skip locked
             ), ${replayLatestRuns('picked', 'false')}
             select * from inserted`,
            [tenantId, flowId, JSON.stringify(input)],
          );
    return { runs: inserted.map(toRun).sort((x, y) => (x.id < y.id ? -1 : 1)), more: failed.length > limit };
  }

  async blockTopic(tenantId: string, topic: string, reason: string | null) {
    const [row] = await this.db.query(
      `insert into blocked_topics (tenant_id, topic, reason) values ($1, $2, $3)
       on conflict (tenant_id, topic) do update set reason = excluded.reason returning *, (xmax = 0) as created`,
      [tenantId, topic, reason],
    );
    return { blockedTopic: toBlockedTopic(row), created: row.created };
  }

  async listBlockedTopics(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select b.*, (select count(*) from messages m join runs r on r.tenant_id = m.tenant_id and r.message_id = m.id
                       where m.tenant_id = b.tenant_id and m.topic = b.topic and r.status = 'held') as held
         from blocked_topics b where b.tenant_id = $1 and ($2::text is null or b.topic > $2) order by b.topic limit $3`,
      [tenantId, decodeCursor(request.after), request.first + 1],
    );
    return page(rows, request, toBlockedTopic, (r) => r.topic);
  }

  async unblockTopic(tenantId: string, topic: string) {
    return (
      (
        await this.db.query('delete from blocked_topics where tenant_id = $1 and topic = $2 returning topic', [
          tenantId,
          topic,
        ])
      ).length > 0
    );
  }

  async releaseHeld(tenantId: string, filter: HeldFilter, page: { after?: string; limit: number }) {
    // Each held run is judged again: still suspended, or still blocked, it stays held with that reason.
    const rows = await this.db.query(
      `with page as (
         select r.id from runs r join messages m on m.tenant_id = r.tenant_id and m.id = r.message_id
          where r.tenant_id = $1 and r.status = 'held' and ($2::text is null or r.held_by = $2)
            and ($3::text is null or m.topic = $3) and ($4::uuid is null or r.id > $4) order by r.id limit $5
       )
       update runs r set status = case when hold.reason is null then 'queued' else 'held' end, held_by = hold.reason
         from page p, messages m cross join lateral (select case
             when exists (select 1 from tenants t where t.id = m.tenant_id and t.status = 'suspended') then 'suspended'
             when exists (select 1 from blocked_topics b where b.tenant_id = m.tenant_id and b.topic = m.topic)
               then 'topic' end as reason) hold
        where r.tenant_id = $1 and r.id = p.id and m.tenant_id = r.tenant_id and m.id = r.message_id
       returning r.*`,
      [tenantId, filter.heldBy ?? null, filter.topic ?? null, page.after ?? null, page.limit],
    );
    // Run ids are time-ordered: their order is the order the messages arrived in.
    const judged = rows.map(toRun).sort((x, y) => (x.id < y.id ? -1 : 1));
    return {
      released: judged.filter((run) => run.status === 'queued'),
      last: rows.length < page.limit ? undefined : judged[judged.length - 1].id,
    };
  }

  async heldRuns() {
    const rows = await this.db.query(
      `select tenant_id, count(*)::integer as runs, extract(epoch from now() - min(created_at))::float8 as oldest
         from runs where status = 'held' group by tenant_id`,
      [],
      GENERIC,
    );
    return Object.fromEntries(
      rows.map((row) => [row.tenant_id as string, { runs: row.runs as number, oldestSeconds: Number(row.oldest) }]),
    );
  }

  async discardHeld(tenantId: string, filter: HeldFilter, reason: string, limit: number) {
    const rows = await this.db.query(
      `with page as (
         select r.id from runs r join messages m on m.tenant_id = r.tenant_id and m.id = r.message_id
          where r.tenant_id = $1 and r.status = 'held' and ($2::text is null or r.held_by = $2)
            and ($3::text is null or m.topic = $3) order by r.id limit $5
       )
       update runs r set status = 'cancelled', held_by = null, finished_at = now(), error = $4::jsonb from page p
        where r.tenant_id = $1 and r.id = p.id
       returning r.id`,
      [tenantId, filter.heldBy ?? null, filter.topic ?? null, json({ kind: 'permanent', message: reason }), limit],
    );
    return rows.length;
  }
}
