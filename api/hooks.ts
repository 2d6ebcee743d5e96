import express, { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Intake } from '../engine/intake.ts';
import { unstorableJson } from '../engine/json-text.ts';
import { HttpProblem, sendProblem } from './problem.ts';

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/;

/**
 * The flow URL: `POST /hooks/:tenantId/:flowKey`. No bearer token (senders are outside systems);
 * the trigger's verification applies. The raw body is kept for signatures and parsed here.
 * The answer comes only after the message and its job are persisted: 202 means it will run.
 */
export function hookRoutes(intake: Intake, bodyLimitBytes: number, logger: Logger): Router {
  const router = Router();
  router.post('/hooks/:tenantId/:flowKey', express.raw({ type: () => true, limit: bodyLimitBytes }), async (req: Request, res: Response) => {
    const { tenantId, flowKey } = req.params as { tenantId: string; flowKey: string };
    if (!SEGMENT.test(tenantId) || !SEGMENT.test(flowKey)) throw noFlow();
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = parseBody(rawBody, req.get('content-type'));
    const query = { ...(req.query as object) };
    const badQuery = unstorableJson(JSON.stringify(query));
    if (badQuery) throw new HttpProblem(400, 'Invalid query', `the query string ${badQuery}`, { errors: [{ path: '$.query', message: badQuery }] });

    let result;
    try {
      result = await intake.accept({ tenantId, flowKey, rawBody, body, headers: req.headers, query });
    } catch (error) {
      // Not persisted, or not enqueued: say so, so the sender retries. Nothing was accepted.
      logger.error({ reqId: req.id, err: error }, 'intake failed');
      return sendProblem(res, new HttpProblem(503, 'Not accepted', 'the message could not be stored; retry later', { headers: { 'Retry-After': '5' } }));
    }
    switch (result.outcome) {
      case 'maintenance':
        throw maintenanceProblem(result.retryAfterSeconds);
      case 'no-flow':
        throw noFlow();
      case 'invalid':
        throw new HttpProblem(400, 'Invalid delivery', `${result.field} ${result.reason}`, { errors: [{ path: result.field, message: result.reason }] });
      case 'unverified':
        throw new HttpProblem(401, 'Unverified delivery', 'the delivery does not carry the verification the flow requires');
      case 'duplicate':
        return answer(res, 200, { messageId: result.messageId, runId: result.runId, duplicate: true });
      case 'accepted':
        return answer(res, 202, { messageId: result.messageId, runId: result.runId });
    }
  });
  return router;
}

/**
 * The answer to a sender, written directly: Express's `res.json` also hashes an ETag and checks
 * freshness, which a webhook answer never uses, on the platform's busiest path.
 */
function answer(res: Response, status: number, value: object) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** Nothing was recorded: the sender retries after the maintenance. */
export const maintenanceProblem = (retryAfterSeconds: number) =>
  new HttpProblem(503, 'Maintenance', 'the platform is in maintenance; retry later', { headers: { 'Retry-After': String(retryAfterSeconds) } });

const noFlow = () => new HttpProblem(404, 'No active flow', 'no active flow answers at this URL');

export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return null;
  if (contentType && !/[/+]json\b/i.test(contentType)) {
    throw new HttpProblem(415, 'Unsupported media type', 'a flow URL takes JSON (Content-Type: application/json)');
  }
  const unstorable = unstorableJson(raw);
  if (unstorable) throw new HttpProblem(400, 'Invalid body', `the body ${unstorable}`, { errors: [{ path: '$.body', message: unstorable }] });
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new HttpProblem(400, 'Malformed JSON', `the body is not valid JSON: ${(error as Error).message}`, { errors: [{ path: '$.body', message: 'is not valid JSON' }] });
  }
}
