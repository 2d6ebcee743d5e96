import { format } from 'node:util';
import type { Logger } from 'pino';
import { storableJson } from '../json-text.ts';
import type { LogLevel, NewRunLog } from '../store/port.ts';
import { redactSecrets } from './redact.ts';

/** Most lines one run keeps; later ones are dropped (the process log still has them). */
export const LOG_LINES_PER_RUN = 200;
const MAX_MESSAGE_CHARS = 2000;
const MAX_DATA_BYTES = 8192;
const RECORDED: readonly LogLevel[] = ['info', 'warn', 'error', 'fatal'];

/**
 * Keeps what operations log during a run pass (info and above) for the Logs API, besides sending
 * it to the process log: the operation's logger is wrapped, its lines are redacted of the run's
 * secret values and capped, and the pass stores them with its next checkpoint.
 */
export class RunLogRecorder {
  private lines: NewRunLog[] = [];

  constructor(private readonly secrets: readonly string[]) {}

  /** A logger that logs as `logger` does and also records, for `nodeId`. */
  wrap(logger: Logger, nodeId: string): Logger {
    const recording = Object.create(logger) as Logger;
    for (const level of RECORDED) {
      recording[level] = ((...args: unknown[]) => {
        this.record(nodeId, level, args);
        return (logger[level] as (...rest: unknown[]) => void)(...args);
      }) as Logger[typeof level];
    }
    return recording;
  }

  /** The lines recorded since the last call. */
  take(): NewRunLog[] {
    return this.lines.splice(0);
  }

  private record(nodeId: string, level: LogLevel, args: unknown[]) {
    if (this.lines.length >= LOG_LINES_PER_RUN) return;
    const [first, ...rest] = args;
    const withObject = first !== null && typeof first === 'object';
    const text = withObject ? (rest.length > 0 ? format(...rest) : (first instanceof Error ? first.message : '')) : format(first, ...rest);
    const data = withObject ? (first instanceof Error ? { error: first.message } : first) : null;
    const kept = data === null ? null : storableJson(redactSecrets(data, this.secrets));
    this.lines.push({
      nodeId, level, loggedAt: new Date().toISOString(),
      message: (redactSecrets(text, this.secrets) as string).slice(0, MAX_MESSAGE_CHARS),
      data: kept === null ? null : Buffer.byteLength(kept.text) > MAX_DATA_BYTES ? { truncated: true, bytes: Buffer.byteLength(kept.text) } : kept.value,
    });
  }
}
