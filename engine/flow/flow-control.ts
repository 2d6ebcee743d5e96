import { type ExpressionSandbox, type Expression, TemplateCompiler } from '../expressions/index.ts';
import {
  type ErrorRecord,
  type FieldError,
  type FlowControl,
  OperationError,
  type RunConcurrency,
} from '../model/index.ts';
import type { MessageInput } from '../plugins/index.ts';

/** Longest concurrency key: it names Redis keys, one per key in use. */
export const MAX_KEY_LENGTH = 256;

/** A flow's concurrency key, compiled: runs whose key is equal wait for one another (flowControl.concurrency). */
export interface CompiledConcurrency {
  key: Expression;
  limit: number;
  scope: 'flow' | 'tenant';
}

/** How a flow's runs wait for one another: compiled at publish. */
export interface CompiledFlowControl {
  concurrency?: CompiledConcurrency;
}

const KEY_PATH = '$.flowControl.concurrency.key';

/** The flow control of a document (its defaults filled in by validation), its problems added to `errors`. */
export function compileFlowControl(
  control: FlowControl | undefined,
  sandbox: ExpressionSandbox,
  errors: FieldError[],
): CompiledFlowControl {
  if (!control?.concurrency) return {};
  const templates = new TemplateCompiler(sandbox);
  const key = templates.compileWhole(control.concurrency.key, KEY_PATH);
  errors.push(...templates.errors);
  if (!key) return {};
  if (!key.readsInputOnly) {
    errors.push({
      path: KEY_PATH,
      message: 'reads only the message ($input): a key is evaluated as the message arrives, before any step runs',
    });
    return {};
  }
  return { concurrency: { key, limit: control.concurrency.limit ?? 1, scope: control.concurrency.scope ?? 'flow' } };
}

/**
 * A run's concurrency key from its message, or why the message gives none (a permanent fault of its run). A failure
 * that may pass (the sandbox busy) is thrown.
 */
export async function concurrencyOf(
  control: CompiledConcurrency,
  input: MessageInput,
): Promise<{ concurrency: RunConcurrency } | { fault: ErrorRecord }> {
  let value: unknown;
  try {
    value = await control.key.evaluate({ input });
  } catch (error) {
    if (!(error instanceof OperationError) || error.kind !== 'permanent') throw error;
    return { fault: keyFault(error.message) };
  }
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string' || value === '')
    return { fault: keyFault(`gave ${describe(value)} for this message, not a string or a number`) };
  if (value.length > MAX_KEY_LENGTH)
    return { fault: keyFault(`gave ${value.length} characters for this message; at most ${MAX_KEY_LENGTH}`) };
  return { concurrency: { key: value, scope: control.scope, limit: control.limit } };
}

const keyFault = (reason: string): ErrorRecord => ({
  kind: 'permanent',
  message: `the concurrency key ${KEY_PATH.slice(2)} ${reason}`,
});

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === '') return 'an empty string';
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
