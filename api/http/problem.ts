import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import {
  ConflictError,
  LimitReachedError,
  NotFoundError,
  OperationError,
  ValidationError,
  type FieldError,
} from '../../engine/model/index.ts';
import { isRedisUnavailable } from '../../engine/redis/index.ts';
import { kindOfStatus, problemTypeUri, type ProblemKind } from './problem-types.ts';

/**
 * An RFC 9457 problem: every error the API answers has this shape. Its `type` names its kind (problem-types.ts): the
 * status's usual one unless `extra.kind` says otherwise.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail?: string,
    readonly extra: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      kind?: ProblemKind;
      [member: string]: unknown;
    } = {},
  ) {
    super(detail ?? title);
  }
}

export function sendProblem(res: ServerResponse, problem: HttpProblem) {
  const { headers, kind, ...members } = problem.extra;
  const body = JSON.stringify({
    type: problemTypeUri(kind ?? kindOfStatus(problem.status)),
    title: problem.title,
    status: problem.status,
    ...(problem.detail === undefined ? {} : { detail: problem.detail }),
    ...members,
  });
  res
    .writeHead(problem.status, {
      ...headers,
      'content-type': 'application/problem+json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    })
    .end(body);
}

/** Answers an error as a problem; internal faults are logged with the request id and told only by that id. */
export function answerError(logger: Logger, req: IncomingMessage, res: ServerResponse, error: unknown) {
  const problem = toProblem(error);
  if (problem.status >= 500) logger.error({ reqId: req.id, err: error }, 'request failed');
  if (res.headersSent) return;
  sendProblem(res, problem);
}

export const problemHandler =
  (logger: Logger): ErrorRequestHandler =>
  (error, req, res, _next) =>
    answerError(logger, req, res, error);

function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof ValidationError)
    return new HttpProblem(400, 'Invalid request', error.message, { errors: error.errors });
  if (error instanceof ConflictError)
    return new HttpProblem(409, 'Conflict', error.message, error.errors ? { errors: error.errors } : {});
  if (error instanceof LimitReachedError)
    return new HttpProblem(409, 'Limit reached', `${error.message}: delete some, or ask an operator`, {
      limit: error.kind,
      kind: 'limit-reached',
    });
  if (error instanceof NotFoundError)
    return new HttpProblem(404, 'Not found', error.message, error.errors ? { errors: error.errors } : {});
  // An outside system called on the request's behalf failed: its reason is told, it is not our fault.
  if (error instanceof OperationError) {
    return error.kind === 'permanent'
      ? new HttpProblem(502, 'Bad gateway', error.message)
      : new HttpProblem(503, 'Service unavailable', error.message, { headers: { 'retry-after': '5' } });
  }
  // Redis restarting or unreachable: nothing was done, and the same request succeeds once it is back.
  if (isRedisUnavailable(error))
    return new HttpProblem(503, 'Service unavailable', 'Redis does not answer; retry', {
      headers: { 'retry-after': '5' },
    });
  // body-parser's own errors carry a status and a type.
  const parser = error as { status?: number; type?: string; limit?: number };
  if (parser.type === 'entity.too.large')
    return new HttpProblem(
      413,
      'Payload too large',
      `the body exceeds the limit of ${parser.limit} bytes (BODY_LIMIT)`,
    );
  if (parser.type === 'encoding.unsupported' || parser.type === 'charset.unsupported')
    return new HttpProblem(415, 'Unsupported encoding');
  if (typeof parser.status === 'number' && parser.status >= 400 && parser.status < 500)
    return new HttpProblem(parser.status, 'Bad request');
  return new HttpProblem(
    500,
    'Internal error',
    'the request could not be completed; the request id identifies it in the logs',
  );
}
