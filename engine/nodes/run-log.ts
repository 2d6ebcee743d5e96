import { format } from 'node:util';
import type { Logger } from 'pino';
import { storableJson } from '../model/index.ts';
import type { LogLevel, NewRunLog } from '../store/index.ts';
import type { SecretRedactor } from '../secrets/index.ts';

/** Most lines one run keeps; later ones are dropped (the process log still has them). */
export const LOG_LINES_PER_RUN = 200;
const MAX_MESSAGE_CHARS = 2000;
const MAX_DATA_BYTES = 8192;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
/** What the run's log keeps; every level is redacted on its way to the process log. */
const RECORDED: readonly LogLevel[] = ['info', 'warn', 'error', 'fatal'];

/**
 * Keeps what operations log during a run pass (info and above) for the Logs API, besides sending
 * it to the process log: the operation's logger is wrapped, every line is redacted of the run's
 * secret values, and those kept are capped and stored with the pass's next checkpoint.
 */
export class RunLogRecorder {
  private lines: NewRunLog[] = [];

  constructor(private readonly redactor: SecretRedactor) {}

  /**
   * A logger that records what it is given, for `nodeId`, and passes it on to the logger `open`
   * makes — both redacted of the run's secret values (pino's own redaction does not reach into
   * messages). That logger is made on the first line written: operations often log at levels that
   * are off, and a pino child per node of every run is a cost on the hot path. `levels` is the logger
   * whose levels apply.
   */
  wrap(levels: Logger, open: () => Logger, nodeId: string): Logger {
    let target: Logger | undefined;
    const opened = () => (target ??= open());
    const recording = Object.create(levels) as Logger;
    recording.child = ((bindings, options) => opened().child(bindings, options)) as Logger['child'];
    recording.bindings = () => opened().bindings();
    for (const level of LEVELS) {
      const kept = (RECORDED as readonly string[]).includes(level);
      recording[level] = ((...args: unknown[]) => {
        if (!kept && !levels.isLevelEnabled(level)) return;
        const { message, data } = this.redacted(args);
        if (kept && this.lines.length < LOG_LINES_PER_RUN) this.keep(nodeId, level as LogLevel, message, data);
        const logger = opened();
        (logger[level] as (...rest: unknown[]) => void)(...(data === null ? [message] : [data, message]));
      }) as Logger['info'];
    }
    return recording;
  }

  /** The lines recorded since the last call. */
  take(): NewRunLog[] {
    return this.lines.splice(0);
  }

  /** pino's call shapes, `(msg, ...args)` or `(obj, msg?, ...args)`, as one message and one object, redacted. */
  private redacted(args: unknown[]): { message: string; data: unknown } {
    const [first, ...rest] = args;
    const withObject = first !== null && typeof first === 'object';
    const text = withObject
      ? rest.length > 0
        ? format(...rest)
        : first instanceof Error
          ? first.message
          : ''
      : format(first, ...rest);
    const data = withObject ? (first instanceof Error ? { error: first.message } : first) : null;
    return {
      message: this.redactor.redact(text).slice(0, MAX_MESSAGE_CHARS),
      data: data === null ? null : this.redactor.redact(data),
    };
  }

  private keep(nodeId: string, level: LogLevel, message: string, data: unknown) {
    const kept = data === null ? null : storableData(data);
    this.lines.push({
      nodeId,
      level,
      loggedAt: new Date().toISOString(),
      message,
      data:
        kept === null
          ? null
          : Buffer.byteLength(kept.text) > MAX_DATA_BYTES
            ? { truncated: true, bytes: Buffer.byteLength(kept.text) }
            : kept.value,
    });
  }
}

/** Log data as it can be stored; data JSON cannot carry (circular) is replaced by the reason. */
function storableData(data: unknown): { text: string; value: unknown } {
  try {
    return storableJson(data);
  } catch (error) {
    return storableJson({ notStored: (error as Error).message });
  }
}
