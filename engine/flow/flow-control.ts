import { type ExpressionSandbox, type Expression, TemplateCompiler } from '../expressions/index.ts';
import {
  type ErrorRecord,
  type FieldError,
  type FlowControl,
  JsonText,
  OperationError,
  parseOnRead,
  type RunConcurrency,
  type RunDebounce,
  unstorableJson,
} from '../model/index.ts';
import type { MessageInput } from '../plugins/index.ts';
import type { NewMessage } from '../store/index.ts';
import { intervalMs } from '../triggers/index.ts';

/** Longest key: it names Redis keys, one per key in use. */
export const MAX_KEY_LENGTH = 256;
/** Longest debounce period, and longest wait for a debounced key's first message. */
const MAX_PERIOD_MS = 3_600_000;
const MAX_WAIT_MS = 24 * 3_600_000;
/** A debounced key's first message waits this many periods at most, unless the flow says. */
const DEFAULT_WAIT_PERIODS = 10;

/** A key over the message, compiled, and the field it is written in. */
interface CompiledKey {
  key: Expression;
  path: string;
}

/** A flow's concurrency key: runs whose key is equal wait for one another (flowControl.concurrency). */
export interface CompiledConcurrency extends CompiledKey {
  limit: number;
  scope: 'flow' | 'tenant';
}

/** A flow's debounce key: messages with an equal key close together collapse into one run (flowControl.debounce). */
export interface CompiledDebounce extends CompiledKey {
  periodMs: number;
  maxWaitMs: number;
}

/** How a flow's runs wait for one another: compiled at publish. */
export interface CompiledFlowControl {
  concurrency?: CompiledConcurrency;
  debounce?: CompiledDebounce;
}

/** The flow control of a document (its defaults filled in by validation), its problems added to `errors`. */
export function compileFlowControl(
  control: FlowControl | undefined,
  sandbox: ExpressionSandbox,
  errors: FieldError[],
): CompiledFlowControl {
  const compiled: CompiledFlowControl = {};
  const { concurrency, debounce } = control ?? {};
  if (concurrency) {
    const key = compileKey(concurrency.key, '$.flowControl.concurrency.key', sandbox, errors);
    if (key) compiled.concurrency = { ...key, limit: concurrency.limit ?? 1, scope: concurrency.scope ?? 'flow' };
  }
  if (debounce) {
    const key = compileKey(debounce.key, '$.flowControl.debounce.key', sandbox, errors);
    const periodMs = intervalMs(debounce.period);
    const maxWaitMs =
      debounce.maxWait === undefined
        ? Math.min(periodMs * DEFAULT_WAIT_PERIODS, MAX_WAIT_MS)
        : intervalMs(debounce.maxWait);
    if (periodMs > MAX_PERIOD_MS) errors.push({ path: '$.flowControl.debounce.period', message: 'is over 1h' });
    if (maxWaitMs < periodMs || maxWaitMs > MAX_WAIT_MS)
      errors.push({ path: '$.flowControl.debounce.maxWait', message: 'must be at least the period and at most 24h' });
    if (key) compiled.debounce = { ...key, periodMs, maxWaitMs };
  }
  return compiled;
}

function compileKey(
  source: string,
  path: string,
  sandbox: ExpressionSandbox,
  errors: FieldError[],
): CompiledKey | undefined {
  const templates = new TemplateCompiler(sandbox);
  const key = templates.compileWhole(source, path);
  errors.push(...templates.errors);
  if (key && !key.readsInputOnly) {
    errors.push({
      path,
      message: 'reads only the message ($input): a key is evaluated as the message arrives, before any step runs',
    });
    return undefined;
  }
  return key && { key, path };
}

/** What a flow's keys give for a message, and why it gives none where it must. */
export interface MessageKeys {
  concurrency?: RunConcurrency;
  debounce?: RunDebounce;
  /** Why the message gives no key (a permanent fault of its run). */
  fault?: ErrorRecord;
}

/**
 * A message's keys under a flow's control. A failure that may pass (the sandbox busy) is thrown; a message that gives
 * a key nothing usable is a `fault`.
 */
export async function keysOf(control: CompiledFlowControl, input: MessageInput): Promise<MessageKeys> {
  const keys: MessageKeys = {};
  const { concurrency, debounce } = control;
  if (concurrency) {
    const key = await keyOf(concurrency, input);
    if (typeof key !== 'string') return { fault: key };
    keys.concurrency = { key, scope: concurrency.scope, limit: concurrency.limit };
  }
  if (debounce) {
    const key = await keyOf(debounce, input);
    if (typeof key !== 'string') return { fault: key };
    keys.debounce = { key, periodMs: debounce.periodMs, maxWaitMs: debounce.maxWaitMs };
  }
  return keys;
}

/**
 * A message's keys, evaluated as it arrives so that its run waits behind those of earlier messages (or gives way to
 * later ones); none when the message gives none (its run's first pass fails, saying why) or they could not be
 * evaluated now. A call is not debounced: its caller waits for the very run it started.
 */
export async function messageKeys(
  control: CompiledFlowControl,
  message: NewMessage,
): Promise<Pick<MessageKeys, 'concurrency' | 'debounce'>> {
  const input: MessageInput = {
    messageId: message.id,
    receivedAt: new Date().toISOString(),
    body: message.body,
    headers: message.headers,
    query: message.query,
  };
  if (message.body instanceof JsonText) parseOnRead(input, 'body', message.body);
  const keys = await keysOf(control, input).catch(() => undefined);
  if (!keys || keys.fault) return {};
  return { concurrency: keys.concurrency, debounce: message.parent ? undefined : keys.debounce };
}

/** The key a message gives, or the fault of its run when it gives none usable. */
async function keyOf({ key, path }: CompiledKey, input: MessageInput): Promise<string | ErrorRecord> {
  const fault = (reason: string): ErrorRecord => ({ kind: 'permanent', message: `the key ${path.slice(2)} ${reason}` });
  let value: unknown;
  try {
    value = await key.evaluate({ input });
  } catch (error) {
    if (!(error instanceof OperationError) || error.kind !== 'permanent') throw error;
    return fault(error.message);
  }
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string' || value === '')
    return fault(`gave ${describe(value)} for this message, not a string or a number`);
  if (value.length > MAX_KEY_LENGTH)
    return fault(`gave ${value.length} characters for this message; at most ${MAX_KEY_LENGTH}`);
  // Kept on the run: a key the store cannot hold would fail the whole group of messages stored with it.
  const unstorable = unstorableJson(JSON.stringify(value));
  return unstorable ? fault(`gave a key that ${unstorable}`) : value;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === '') return 'an empty string';
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
