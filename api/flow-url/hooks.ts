import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import type { Logger } from 'pino';
import { BodyTooLargeError, decodeBody, isDecodable, readBody } from '../../engine/outbound/index.ts';
import type { Delivery, Intake, IntakeResult } from '../../engine/intake/index.ts';
import { JsonText, unstorableJson } from '../../engine/model/index.ts';
import { bodyFault, answerError, HttpProblem, trackRequest } from '../http/index.ts';
import { watchRun } from './run-watch.ts';
import { isTerminal, type RunStore, type Step } from '../../engine/store/index.ts';
import type { Reply } from '../../engine/nodes/index.ts';
import {
  logFieldsOf,
  parseTraceparent,
  type SpanContext,
  type Tracer,
  type TraceSpan,
} from '../../engine/telemetry/index.ts';

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/;
/** The tenant, and after `~` its environment outside production (decision 28): `acme`, `acme~staging`. */
const TENANT_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:~[a-z][a-z0-9-]{0,31})?$/;
const HOOK_URL = /^\/hooks\/([^/?#]+)\/([^/?#]+)\/?(?:\?(.*))?$/;

/**
 * The flow URL: `POST /hooks/:tenantId/:flowKey`, the tenant's id followed by `~<environment>` outside production.
 * No bearer token (senders are outside systems);
 * the trigger's verification applies. The answer comes only after the message and its job are
 * persisted: 202 means it will run.
 *
 * It is served on node:http ahead of the Express app, which takes every other request: on the
 * platform's busiest path Express's per-request work (its request and response prototypes,
 * routing, body-parser) cost about 40 % of intake throughput. Request ids, the request log, the
 * body limit, content codings and problem answers are the ones the app uses.
 * Returns false for a request that is not a delivery to a flow URL.
 */
export interface HookOptions {
  bodyLimitBytes: number;
  /** Where a flow URL whose flow replies reads the run's reply. */
  runs: Pick<RunStore, 'getRun'>;
  /** How long it waits for the reply (REPLY_WAIT_MS). */
  replyWaitMs: number;
  logger: Logger;
  tracer: Tracer;
}

export function hookHandler(
  intake: Intake,
  options: HookOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { logger } = options;
  return (req, res) => {
    const url = req.method === 'POST' ? HOOK_URL.exec(req.url ?? '') : null;
    if (!url) return false;
    const [, tenantId, flowKey, queryString] = url;
    const path = `/hooks/${tenantId}/${flowKey}`;
    const span = options.tracer.enabled ? deliverySpan(options.tracer, req, res, path) : undefined;
    trackRequest(logger, req, res, path, span && logFieldsOf(span.context));
    receive(intake, req, res, { tenantId, flowKey, queryString, trace: span?.context }, options).catch(
      (error: unknown) => answerError(logger, req, res, error),
    );
    return true;
  };
}

/**
 * The server span of a delivery (HTTP semantic conventions), the child of the sender's `traceparent` when it
 * sends a valid one; it ends when the answer has been sent.
 */
function deliverySpan(tracer: Tracer, req: IncomingMessage, res: ServerResponse, path: string): TraceSpan {
  const sent = req.headers.traceparent;
  const span = tracer.start(`POST ${HOOK_ROUTE}`, {
    kind: 'server',
    parent: parseTraceparent(typeof sent === 'string' ? sent : undefined),
    attributes: { 'http.request.method': 'POST', 'http.route': HOOK_ROUTE, 'url.path': path, 'url.scheme': 'http' },
  });
  res.once('close', () => {
    span.set({ 'http.response.status_code': res.statusCode });
    span.end(res.statusCode >= 500 || !res.writableFinished ? String(res.statusCode) : undefined);
  });
  return span;
}

const HOOK_ROUTE = '/hooks/{tenantId}/{flowKey}';

interface FlowUrl {
  tenantId: string;
  flowKey: string;
  queryString?: string;
  trace?: SpanContext;
}

async function receive(
  intake: Intake,
  req: IncomingMessage,
  res: ServerResponse,
  { tenantId, flowKey, queryString, trace }: FlowUrl,
  options: HookOptions,
) {
  const { logger } = options;
  const rawBody = await readDelivery(req, res, options.bodyLimitBytes);
  if (!TENANT_SEGMENT.test(tenantId) || !SEGMENT.test(flowKey)) throw noFlow();
  const body = await checkedBody(intake, rawBody, req.headers['content-type']);
  const query = queryString ? { ...querystring.parse(queryString) } : {};
  const badQuery = unstorableJson(JSON.stringify(query));
  if (badQuery)
    throw new HttpProblem(400, 'Invalid query', `the query string ${badQuery}`, {
      errors: [{ path: '$.query', message: badQuery }],
    });

  const result = await accepted(
    intake,
    { tenantId, flowKey, rawBody, body, headers: req.headers, query, trace },
    (error) => logger.error({ reqId: req.id, err: error }, 'intake failed'),
  );
  switch (result.outcome) {
    case 'no-flow':
      throw noFlow();
    case 'duplicate':
      return answer(res, 200, { messageId: result.messageId, runId: result.runId, duplicate: true });
    case 'accepted': {
      const ids = { messageId: result.messageId, runId: result.runId };
      const reply =
        result.replyNodes.length > 0 ? await awaitReply(tenantId, ids.runId, result.replyNodes, options) : undefined;
      return reply ? sendReply(res, reply, ids) : answer(res, 202, ids);
    }
  }
}

/** The run's reply (a reply node's output), if one comes within REPLY_WAIT_MS. */
async function awaitReply(tenantId: string, runId: string, nodes: string[], options: HookOptions) {
  const replyOf = (steps: Step[]) =>
    steps.find((step) => step.status === 'succeeded' && nodes.includes(step.key))?.output as Reply | undefined;
  const found = await watchRun(
    options.runs,
    tenantId,
    runId,
    options.replyWaitMs,
    ({ run, steps }) => replyOf(steps) !== undefined || isTerminal(run.status),
  );
  return found && replyOf(found.steps);
}

/** Statuses HTTP sends without a body (RFC 9110 6.4.1). */
const BODYLESS = new Set([204, 304]);

/**
 * What every reply carries whatever the flow set: a reply is the tenant's content served from the API's origin, so a
 * browser must neither sniff it into HTML nor run anything in it.
 */
const REPLY_GUARDS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
};

/**
 * A reply as the flow made it (JSON, or text as it is when the flow set a content-type), with the ids of the message
 * and its run, which the flow's own headers cannot replace: a sender finds the run that answered it.
 */
function sendReply(res: ServerResponse, reply: Reply, ids: { messageId: string; runId: string }) {
  const status = reply.status ?? 200;
  const headers = Object.fromEntries(
    Object.entries(reply.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
  const asText = typeof reply.body === 'string' && headers['content-type'] !== undefined;
  let body = reply.body === undefined ? '' : asText ? (reply.body as string) : JSON.stringify(reply.body);
  if (BODYLESS.has(status)) {
    body = '';
    delete headers['content-type'];
  } else if (!asText && reply.body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
  res.writeHead(status, {
    ...headers,
    ...REPLY_GUARDS,
    'x-tributary-message-id': ids.messageId,
    'x-tributary-run-id': ids.runId,
    ...(BODYLESS.has(status) ? {} : { 'content-length': Buffer.byteLength(body) }),
  });
  res.end(body);
}

/** The body as the sender meant it (decoded from gzip, deflate or br), at most `limit` bytes. */
async function readDelivery(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer> {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && !isDecodable(encoding)) {
    // Its body is not read: the connection closes after the answer.
    res.setHeader('connection', 'close');
    throw new HttpProblem(
      415,
      'Unsupported media type',
      `the content coding "${encoding}" is not supported (gzip, deflate or br)`,
    );
  }
  try {
    return await decodeBody(encoding, await readBody(req, limit), limit);
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      res.setHeader('connection', 'close');
      throw new HttpProblem(
        413,
        'Payload too large',
        `the body exceeds the limit of ${limit} bytes${error.stage === 'decoded' ? ' once decoded' : ''} (BODY_LIMIT)`,
      );
    }
    if (req.readableEnded)
      throw new HttpProblem(400, 'Invalid body', `the body is not valid ${encoding} data`, {
        errors: [{ path: '$.body', message: `is not valid ${encoding} data` }],
      });
    // The sender went away mid-body: there is nobody to answer.
    throw new HttpProblem(400, 'Incomplete body', 'the request ended before its body');
  }
}

/**
 * The answer to a sender, written directly: Express's `res.json` also hashes an ETag and checks
 * freshness, which a webhook answer never uses, on the platform's busiest path.
 */
function answer(res: ServerResponse, status: number, value: object) {
  const body = JSON.stringify(value);
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    .end(body);
}

/**
 * A delivery stored and queued (or found a duplicate), or its flow missing; any other outcome is refused with nothing
 * recorded, as a problem the sender acts on (retry later, fix the delivery).
 */
export async function accepted(
  intake: Intake,
  delivery: Delivery,
  onFault: (error: unknown) => void,
): Promise<Extract<IntakeResult, { outcome: 'accepted' | 'duplicate' | 'no-flow' }>> {
  let result: IntakeResult;
  try {
    result = await intake.accept(delivery);
  } catch (error) {
    // Not persisted, or not enqueued: say so, so the sender retries. Nothing was accepted.
    onFault(error);
    throw new HttpProblem(503, 'Not accepted', 'the message could not be stored; retry later', {
      headers: { 'Retry-After': '5' },
    });
  }
  switch (result.outcome) {
    case 'maintenance':
      throw new HttpProblem(503, 'Maintenance', 'the platform is in maintenance; retry later', {
        headers: { 'Retry-After': String(result.retryAfterSeconds) },
        kind: 'maintenance',
      });
    case 'throttled':
      throw new HttpProblem(429, 'Too many deliveries', `nothing was recorded: ${result.reason}; retry later`, {
        headers: { 'Retry-After': String(result.retryAfterSeconds) },
      });
    case 'invalid':
      throw new HttpProblem(400, 'Invalid delivery', `${result.field} ${result.reason}`, {
        errors: [{ path: result.field, message: result.reason }],
      });
    case 'unverified':
      throw new HttpProblem(
        401,
        'Unverified delivery',
        'the delivery does not carry the verification the flow requires',
      );
    default:
      return result;
  }
}

const noFlow = () => new HttpProblem(404, 'No active flow', 'no active flow answers at this URL');

/**
 * A delivery's body as the JSON text it came in, once checked (off the event loop when it is large,
 * see JsonChecker): never parsed here, it goes to the store as it is.
 */
export async function checkedBody(intake: Intake, raw: Buffer, contentType: string | undefined): Promise<JsonText> {
  if (contentType && !/[/+]json\b/i.test(contentType)) {
    throw new HttpProblem(415, 'Unsupported media type', 'a flow URL takes JSON (Content-Type: application/json)');
  }
  if (raw.length === 0) {
    throw new HttpProblem(400, 'Empty body', 'the body is empty: a flow URL takes a JSON document', {
      errors: [{ path: '$.body', message: 'is empty' }],
    });
  }
  const fault = await intake.checkBody(raw);
  if (fault) throw bodyFault(fault);
  return new JsonText(raw.toString('utf8'));
}
