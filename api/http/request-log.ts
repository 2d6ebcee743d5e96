import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { newId } from '../../engine/model/index.ts';

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

/**
 * `trackRequest` for the Express app; `quietPaths` (health probes) get an id but no log line. Under each of
 * `signedPaths` the next segment is a token that opens a page without sign-in (a signed run-page link): it is
 * logged as [REDACTED].
 */
export function requestLog(
  logger: Logger,
  quietPaths: ReadonlySet<string>,
  signedPaths: readonly string[],
): RequestHandler {
  const signed = signedPaths.map((prefix) => ({ prefix, pattern: new RegExp(`^${prefix}/[^/]+`) }));
  const logged = (path: string) =>
    signed.reduce((shown, { prefix, pattern }) => shown.replace(pattern, `${prefix}/[REDACTED]`), path);
  return (req, res, next) => {
    trackRequest(logger, req, res, quietPaths.has(req.path) ? undefined : logged(req.path));
    next();
  };
}
