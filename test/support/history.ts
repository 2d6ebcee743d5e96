import { idAt, newId } from '../../engine/model/ids.ts';
import type { Store } from '../../engine/store/port.ts';
import type { SqlExecutor } from '../../engine/store/sql/driver.ts';
import { oneTransform } from './flow-documents.ts';

/**
 * A tenant's history, for the tests and the bench of a store that has run for months: grown by SQL from real
 * rows, and the reads users and operators make over it.
 */

const DAY_MS = 86_400_000;

/** A UUIDv7 of the time `at`, its other bits from row `g` and `salt`: ids sort by time, as the product's do. */
const seedId = (at: string, salt: string) =>
  `(lpad(to_hex((extract(epoch from ${at}) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text || '${salt}'), 1, 3)
    || '8' || substr(md5(g::text || '${salt}'), 4, 15))::uuid`;
/** 0 for one row in `every`, by the row's id. */
const oneIn = (every: string) => `abs(hashtext(id::text)) % ${every}`;

/** How a tenant's history is grown: `runs` messages with a run and its steps each, spread over `days`. */
export interface SeedPlan {
  tenantId: string;
  /** The flows the messages go to, in turn. */
  flowIds: string[];
  runs: number;
  days: number;
  /** The newest message's time (default: now). */
  until?: Date;
  /** One in this many runs fails (default 20: 5 %), and one in ten of those runs' messages has a rare topic. */
  failEvery?: number;
  /** Rows a statement writes (default 50,000): the statements stay of a production size. */
  chunk?: number;
}

/**
 * Grows a tenant's history by SQL from its real rows: every message, run and step is a copy of the tenant's
 * latest finished run (its body, headers, outputs), under a new time-ordered id and time, so that the tables
 * and their indexes hold what production would. Runs are written running and then finished by an update, as
 * workers do, so the rollups' triggers count them.
 */
export async function seedHistory(db: SqlExecutor, plan: SeedPlan): Promise<void> {
  const until = (plan.until ?? new Date()).getTime();
  const spanMs = plan.days * 86_400_000;
  const chunk = plan.chunk ?? 50_000;
  const failEvery = plan.failEvery ?? 20;
  for (let first = 1; first <= plan.runs; first += chunk) {
    const last = Math.min(plan.runs, first + chunk - 1);
    // Row g of n is received at until - (n - g) * span / n: g = n is the newest.
    await db.query(
      `with template as (
         select m.body, m.headers, m.query, m.topic, r.id as run_id from runs r
           join messages m on m.tenant_id = r.tenant_id and m.id = r.message_id
          where r.tenant_id = $1 and r.status = 'succeeded' order by r.id desc limit 1
       ), rows as (
         select g, to_timestamp(($4::float8 - ($3::float8 - g) * $5::float8 / $3::float8) / 1000) as at,
                ($6::uuid[])[1 + g % cardinality($6::uuid[])] as flow_id from generate_series($2::int, $7::int) g
       ), ids as (
         select g, at, flow_id, ${seedId('at', 'm')} as message_id, ${seedId("at + interval '1 ms'", 'r')} as run_id
           from rows
       ), m as (
         insert into messages (tenant_id, id, flow_id, flow_version, delivery_id, topic, body, headers, query,
           received_at, keep_days)
         select $1, i.message_id, i.flow_id, 1, 'seed-' || i.message_id,
                case when i.g % ($8::int * 10) = 0 then 'rare/topic' else t.topic end, t.body, t.headers, t.query, i.at,
                keep_days($1)
           from ids i cross join template t
       ), r as (
         insert into runs (tenant_id, id, flow_id, flow_version, message_id, status, attempts, created_at, started_at,
           keep_days)
         select $1, i.run_id, i.flow_id, 1, i.message_id, 'running', 1, i.at, i.at + interval '1 ms', keep_days($1)
           from ids i
       )
       insert into steps (tenant_id, run_id, key, node_id, status, attempts, output, error, started_at, finished_at,
         exchanges, keep_days)
       select $1, i.run_id, s.key, s.node_id, s.status, s.attempts, s.output, s.error, i.at, i.at + interval '2 ms',
              s.exchanges, keep_days($1)
         from ids i cross join template t join steps s on s.tenant_id = $1 and s.run_id = t.run_id`,
      [plan.tenantId, first, plan.runs, until, spanMs, plan.flowIds, last, failEvery],
    );
    const at = (g: number) => until - ((plan.runs - g) * spanMs) / plan.runs;
    await db.query(
      `update runs set status = case when ${oneIn('$2')} = 0 then 'failed' else 'succeeded' end,
         error = case when ${oneIn('$2')} = 0 then jsonb_build_object('kind',
           case when ${oneIn('3')} = 0 then 'retryable' else 'permanent' end, 'message', 'seeded failure') end,
         finished_at = started_at + make_interval(secs => abs(hashtext(id::text || 'd')) % 997 / 1000.0)
       where tenant_id = $1 and status = 'running' and id >= $3::uuid and id <= $4::uuid`,
      [
        plan.tenantId,
        failEvery,
        idAt(at(first) - 1),
        idAt(at(last) + 2).replace(/7000-8000-0+$/, '7fff-bfff-ffffffffffff'),
      ],
    );
  }
}

const doc = oneTransform;

/** A tenant with three published flows and one real, finished run: what seedHistory copies. Its flows' ids. */
export async function historyTenant(store: Store, tenantId: string): Promise<string[]> {
  await store.createTenant({ id: tenantId, name: tenantId });
  const flowIds: string[] = [];
  for (const key of ['orders', 'refunds', 'stock']) {
    const flow = await store.createFlow(tenantId, { id: newId(), key, name: key, draft: doc(key) });
    await store.publishFlow(tenantId, flow.id, undefined, doc(key));
    flowIds.push(flow.id);
  }
  const [accepted] = await store.acceptMessages([
    {
      message: {
        tenantId,
        id: newId(),
        flowId: flowIds[0],
        flowVersion: 1,
        deliveryId: null,
        topic: 'orders/create',
        body: { order: { id: 820982911946154500, line_items: [{ sku: 'A-1', quantity: 2 }] } },
        headers: { 'content-type': 'application/json' },
        query: {},
      },
      runId: newId(),
    },
  ]);
  if (!accepted) throw new Error('the first message was not recorded');
  await store.beginRun(tenantId, accepted.run.id);
  const at = new Date().toISOString();
  await store.saveProgress(
    tenantId,
    accepted.run.id,
    [
      {
        runId: accepted.run.id,
        key: 'a',
        nodeId: 'a',
        status: 'succeeded',
        attempts: 1,
        output: { sent: true },
        error: null,
        startedAt: at,
        finishedAt: at,
        // What a step that sent one small JSON request keeps of it (RECORD_EXCHANGES).
        exchanges: [
          {
            request: {
              method: 'POST',
              url: 'https://erp.example.com/orders',
              headers: { 'content-type': 'application/json', 'idempotency-key': `${accepted.messageId}.a` },
              body: '{"order":820982911946154500,"lines":1}',
            },
            response: {
              status: 200,
              headers: { 'content-type': 'application/json', date: new Date().toUTCString(), 'content-length': '13' },
              body: '{"sent":true}',
            },
          },
        ],
      },
    ],
    { status: 'succeeded', error: null },
  );
  return flowIds;
}

/** What a tenant's reads name: its flows, a message and its latest run of a month ago, the cursors of first pages. */
export interface HistorySample {
  flowIds: string[];
  messageId: string;
  runId: string;
  runsCursor: string;
  messagesCursor: string;
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

/** A tenant's sample: the message of a month ago is its newest one where the history is shorter. */
export async function historySample(store: Store, tenantId: string, flowIds: string[]): Promise<HistorySample> {
  const monthAgo = await store.listMessages(tenantId, { receivedTo: ago(30 * DAY_MS) }, { first: 1 }, 0);
  const messages = await store.listMessages(tenantId, {}, { first: 50 }, 0);
  const messageId = (monthAgo.nodes[0] ?? messages.nodes[0]).id;
  const found = await store.getMessage(tenantId, messageId, 0);
  const runs = await store.listRuns(tenantId, {}, { first: 50 });
  return {
    flowIds,
    messageId,
    runId: found!.runs[found!.runs.length - 1].id,
    runsCursor: runs.pageInfo.endCursor ?? '',
    messagesCursor: messages.pageInfo.endCursor ?? '',
  };
}

/** A read a user or an operator makes, by name, for a tenant and its sample. */
export type HistoryRead = [
  name: string,
  read: (store: Store, tenantId: string, sample: HistorySample) => Promise<unknown>,
];

/** The reads of issue 37's table, and the API's other reads of the history, through the store (what routes call). */
export const HISTORY_READS: HistoryRead[] = [
  [
    'statistics, 30 days daily',
    (store, tenantId) => store.statistics(tenantId, { from: ago(30 * DAY_MS), to: ago(0), interval: 'day' }),
  ],
  [
    'statistics, last 24 h hourly, one flow',
    (store, tenantId, { flowIds }) =>
      store.statistics(tenantId, { from: ago(DAY_MS), to: ago(0), interval: 'hour', flowId: flowIds[1] }),
  ],
  ['backlog, last 24 h', (store, tenantId) => store.backlog(tenantId, ago(DAY_MS))],
  ["dashboard, each flow's last error", (store, tenantId) => store.flowHealth(tenantId)],
  [
    'replay dry run, failed in 7 days',
    (store, tenantId) => store.countReplayable(tenantId, { status: 'failed', receivedFrom: ago(7 * DAY_MS) }),
  ],
  [
    'replay dry run, by error kind',
    (store, tenantId) => store.countReplayable(tenantId, { status: 'failed', errorKind: 'retryable' }),
  ],
  [
    'messages with a rare status',
    (store, tenantId) => store.listMessages(tenantId, { status: 'cancelled' }, { first: 50 }, 4096),
  ],
  [
    'messages of one day, 30 days ago',
    (store, tenantId) =>
      store.listMessages(
        tenantId,
        { receivedFrom: ago(30 * DAY_MS), receivedTo: ago(29 * DAY_MS) },
        { first: 50 },
        4096,
      ),
  ],
  [
    'messages, second page',
    (store, tenantId, { messagesCursor }) =>
      store.listMessages(tenantId, {}, { first: 50, after: messagesCursor }, 4096),
  ],
  [
    'messages of a rare topic',
    (store, tenantId) => store.listMessages(tenantId, { topic: 'rare/topic' }, { first: 50 }, 4096),
  ],
  [
    'messages of a flow, failed',
    (store, tenantId, { flowIds }) =>
      store.listMessages(tenantId, { flowId: flowIds[2], status: 'failed' }, { first: 50 }, 4096),
  ],
  [
    'a message of a month ago, with its runs',
    (store, tenantId, { messageId }) => store.getMessage(tenantId, messageId, 4096),
  ],
  ['runs, first page', (store, tenantId) => store.listRuns(tenantId, {}, { first: 50 })],
  [
    'runs, second page',
    (store, tenantId, { runsCursor }) => store.listRuns(tenantId, {}, { first: 50, after: runsCursor }),
  ],
  [
    'runs of a flow, failed',
    (store, tenantId, { flowIds }) => store.listRuns(tenantId, { flowId: flowIds[0], status: 'failed' }, { first: 50 }),
  ],
  ['a run of a month ago, with its steps', (store, tenantId, { runId }) => store.getRun(tenantId, runId)],
  ["a run's log lines", (store, tenantId, { runId }) => store.listRunLogs(tenantId, { runId }, { first: 50 })],
  [
    "a flow's log lines of the last hour, warnings and worse",
    (store, tenantId, { flowIds }) =>
      store.listRunLogs(tenantId, { flowId: flowIds[0], level: 'warn', from: ago(3_600_000) }, { first: 50 }),
  ],
  // Every tenant's, as `/metrics` reads them at each scrape.
  ['metrics, held runs per tenant', (store) => store.heldRuns()],
];
