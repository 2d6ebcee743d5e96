import type { ErrorRecord } from '../model/index.ts';
import type { TerminalRunStatus } from '../store/index.ts';

/** What the queue should do with the job after one pass of the executor. */
export type PassOutcome =
  | { kind: 'finished'; status: TerminalRunStatus; error?: ErrorRecord }
  /** A node waits: take the job up again after `delayMs` (a retry, or a "later"). */
  | { kind: 'wait'; delayMs: number; reason: string }
  /** The run does not exist (its tenant was deleted): nothing to do. */
  | { kind: 'gone' };
