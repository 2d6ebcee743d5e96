import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { newId } from '../engine/model/index.ts';
import { RUN_PAGES_PATH } from './run-page.ts';

declare module 'http' {
  interface IncomingMessage {
    /** The request id: the caller's `x-request-id` when it is a plausible one, else a new one. */
    id: string;
  }
}

const REQUEST_ID = /^[\w.:-]{1,100}$/;

/**
 * Request ids and one log line per request (method, path, status, duration; never headers or the
 * query string, which can carry credentials). pino-http did the same at about 40 % of a bare
 * handler's throughput on the benchmark machine; this costs next to nothing when nothing is logged.
 * Without a `path`, the request gets its id but no log line.
 */
export function trackRequest(
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  path: string | undefined,
  /** More fields for its line (the trace and span ids of a traced request). */
  fields?: Record<string, string>,
) {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId();
  req.id = id;
  res.setHeader('x-request-id', id);
  if (path !== undefined && logger.isLevelEnabled('info')) {
    const started = performance.now();
    res.once('finish', () => {
      logger.info(
        {
          reqId: id,
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
          ...fields,
        },
        'request',
      );
    });
  }
}

/** A signed run-page link's token opens the run without sign-in: its path is logged without it. */
const SIGNED_PAGE = new RegExp(`^${RUN_PAGES_PATH}/[^/]+`);

/** `trackRequest` for the Express app; `quietPaths` (health probes) get an id but no log line. */
export function requestLog(logger: Logger, quietPaths: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    trackRequest(
      logger,
      req,
      res,
      quietPaths.has(req.path) ? undefined : req.path.replace(SIGNED_PAGE, `${RUN_PAGES_PATH}/[REDACTED]`),
    );
    next();
  };
}
