import type { ErrorRecord } from '../model/index.ts';
import type { HandledFailures } from '../nodes/index.ts';
import type { TerminalRunStatus } from '../store/index.ts';

/** What the queue should do with the job after one pass of the executor. */
export type PassOutcome =
  | { kind: 'finished'; status: TerminalRunStatus; error?: ErrorRecord }
  /** A node waits: take the job up again after `delayMs` (a retry, or a "later"). */
  | { kind: 'wait'; delayMs: number; reason: string }
  /** The run does not exist (its tenant was deleted): nothing to do. */
  | { kind: 'gone' };

/** The failures of two parts of a walk, together: the earlier part's first. */
export const withHandled = (so: HandledFailures | undefined, more: HandledFailures | undefined) =>
  so && more ? { first: so.first, count: so.count + more.count } : (so ?? more);

/** Exponential backoff with "equal jitter": half fixed, half random, so retries of many runs spread out. */
export function backoff(baseMs: number, attempt: number) {
  const exponential = baseMs * 2 ** (attempt - 1);
  return exponential / 2 + Math.random() * (exponential / 2);
}
