import express, { type Request, type RequestHandler } from 'express';
import type { JsonChecker } from '../../engine/intake/index.ts';
import {
  type JsonTextFault,
  LARGE_JSON_LENGTH,
  parseJson,
  parseJsonText,
  unsafeIntegerFault,
} from '../../engine/model/index.ts';
import { HttpProblem } from './problem.ts';

const JSON_TYPES = ['application/json', 'application/*+json'];

/** A body that is not JSON, or JSON the store could not keep as it is: 400, naming the body. */
export const bodyFault = (fault: JsonTextFault) =>
  fault.malformed
    ? new HttpProblem(400, 'Malformed JSON', `the body ${fault.message}`, {
        errors: [{ path: '$.body', message: 'is not valid JSON' }],
      })
    : new HttpProblem(400, 'Invalid body', `the body ${fault.message}`, {
        errors: [{ path: '$.body', message: fault.message }],
      });

/** Like body-parser's strict mode: an API body is an object or an array (its first character after whitespace). */
function isObjectOrArray(raw: Buffer): boolean {
  for (const byte of raw) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}

/** Bodies holding an integer beyond 2^53 - 1 (read as the string of its digits), and what to say of it. */
const unsafeIntegers = new WeakMap<Request, JsonTextFault>();

/**
 * The route's body as parsed, refused (400) when it holds an integer beyond 2^53 - 1 and the route does not
 * keep such integers as flow URLs do: read as a string, it would pass where a string belongs.
 */
export function checkedBody(req: Request, keepsLargeIntegers: boolean): unknown {
  const unsafe = unsafeIntegers.get(req);
  if (unsafe && !keepsLargeIntegers) throw bodyFault(unsafe);
  return req.body;
}

/**
 * JSON request bodies of the API, read by body-parser (up to `limitBytes`, inflated) and accepted
 * as at flow URLs (checkJsonText; an integer beyond 2^53 - 1 is noted for checkedBody). A large body is
 * checked by the checker's thread, so that only its JSON.parse (~5 ms a megabyte) runs on this event
 * loop; a small one is checked and parsed here at once.
 */
export function jsonBodies(limitBytes: number, checker: JsonChecker): RequestHandler[] {
  const parse: RequestHandler = (req, _res, next) => {
    const raw: unknown = req.body;
    if (!Buffer.isBuffer(raw)) return next();
    if (raw.length === 0) {
      req.body = {};
      return next();
    }
    if (!isObjectOrArray(raw)) return next(bodyFault({ malformed: true, message: 'is not a JSON object or array' }));
    if (raw.length <= LARGE_JSON_LENGTH) {
      const parsed = parseJsonText(raw);
      if (parsed.fault) return next(bodyFault(parsed.fault));
      noteUnsafeIntegers(req, raw.toString('utf8'));
      req.body = parsed.value;
      return next();
    }
    checker.check(raw).then((fault) => {
      if (fault) return next(bodyFault(fault));
      const text = raw.toString('utf8');
      noteUnsafeIntegers(req, text);
      req.body = parseJson(text);
      next();
    }, next);
  };
  return [express.raw({ limit: limitBytes, type: JSON_TYPES }), parse];
}

function noteUnsafeIntegers(req: Request, text: string) {
  const unsafe = unsafeIntegerFault(text);
  if (unsafe) unsafeIntegers.set(req, unsafe);
}
