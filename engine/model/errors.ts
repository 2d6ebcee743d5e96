/**
 * Errors are values with a kind, so the engine decides what to do without parsing messages:
 * - `retryable`: a transient fault (network, timeout, 429, 5xx); retried with backoff, spends an attempt.
 * - `permanent`: retrying cannot help (validation, 4xx); the run fails at once with this reason.
 * - `later`: "not yet" (a dependency is not ready); delayed without spending an attempt.
 */
export type ErrorKind = 'retryable' | 'permanent' | 'later';

export interface OperationErrorOptions {
  /** Wait at least this long before the next try (e.g. a Retry-After header). */
  retryAfterMs?: number;
  /** Structured, secret-free facts for the run record (status code, remote error code...). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class OperationError extends Error {
  override readonly name = 'OperationError';
  readonly retryAfterMs?: number;
  readonly details?: Record<string, unknown>;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    options: OperationErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details;
  }
}

export const retryable = (message: string, options?: OperationErrorOptions) =>
  new OperationError('retryable', message, options);
export const permanent = (message: string, options?: OperationErrorOptions) =>
  new OperationError('permanent', message, options);
export const later = (message: string, options?: OperationErrorOptions) =>
  new OperationError('later', message, options);

/**
 * A ValidationError (a resolved config that breaks its schema) is permanent: retrying resolves the
 * same config. Anything else not an OperationError is a retryable fault of unknown origin.
 */
export function toOperationError(error: unknown): OperationError {
  if (error instanceof OperationError) return error;
  if (error instanceof ValidationError) {
    const fields = error.errors.map((field) => `${field.path} ${field.message}`).join('; ');
    return new OperationError('permanent', `${error.message}: ${fields}`, {
      details: { errors: error.errors },
      cause: error,
    });
  }
  // Retrying cannot make room: the tenant must delete something, or an operator raise the limit.
  if (error instanceof LimitReachedError) return new OperationError('permanent', error.message, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new OperationError('retryable', message, { cause: error });
}

/** The serialisable form stored in run and step records (schema in resources.ts). */
export type { ErrorRecord } from './resources.ts';
import type { ErrorRecord } from './resources.ts';

export function toErrorRecord(error: OperationError): ErrorRecord {
  return error.details
    ? { kind: error.kind, message: error.message, details: error.details }
    : { kind: error.kind, message: error.message };
}

/** A validation failure: each entry names the JSON path of the bad field. */
export interface FieldError {
  path: string;
  message: string;
  /** The flow node the field belongs to, when there is one. */
  node?: string;
}

export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    message: string,
    readonly errors: FieldError[],
  ) {
    super(message);
  }
}

/** A write based on a stale revision (optimistic concurrency). */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  constructor(
    message: string,
    /** The fields the conflict is about, when it is about some. */
    readonly errors?: FieldError[],
  ) {
    super(message);
  }
}

/** A write that would take a tenant past a limit on what it keeps (its message names the limit's setting). */
export class LimitReachedError extends Error {
  override readonly name = 'LimitReachedError';
  constructor(
    /** What the tenant has too much of: "variables", "documents", ... */
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

/** Something named that does not exist for the tenant; for ids a body names, `errors` gives the path of each. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(
    message: string,
    readonly errors?: FieldError[],
  ) {
    super(message);
  }
}

/** Field errors of an input (`$.nodes[0]...`) as paths of where the input sits (`$.draft.nodes[0]...`). */
export const underPath = (errors: FieldError[], prefix: string): FieldError[] =>
  errors.map((error) => ({ ...error, path: prefix + error.path.slice(1) }));

/**
 * The same error with its field paths under `prefix`: use cases name the fields of their input from `$`, and
 * their caller knows where that input came from (a request's body, a flow's draft).
 */
export function rerooted(error: unknown, prefix: string): unknown {
  if (error instanceof ValidationError) return new ValidationError(error.message, underPath(error.errors, prefix));
  if (error instanceof NotFoundError && error.errors)
    return new NotFoundError(error.message, underPath(error.errors, prefix));
  return error;
}
