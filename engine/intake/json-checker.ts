import type { Worker } from 'node:worker_threads';
import { retryable, checkJsonText, type JsonTextFault, LARGE_JSON_LENGTH } from '../model/index.ts';
import type { CheckReply, CheckRequest } from './json-checker-thread.ts';
import { typeScriptThread } from './typescript-thread.ts';

/**
 * Checks JSON bodies (checkJsonText) without holding the event loop: parsing and walking a body of a
 * megabyte takes ~10 ms, during which this process would answer nothing. Small bodies, the common
 * case, are checked at once; larger ones by a thread of its own (started on first use), which only
 * answers whether the text is fit: the parsed value never crosses back, so a body is never parsed on
 * the event loop at all (JsonText).
 */
type Waiter = { resolve(fault?: JsonTextFault): void; reject(error: Error): void };

export class JsonChecker {
  private current?: { thread: Worker; pending: Map<number, Waiter> };
  private nextId = 1;

  check(raw: Buffer): Promise<JsonTextFault | undefined> {
    // Small texts are checked here, in a fraction of a millisecond.
    if (raw.length <= LARGE_JSON_LENGTH) return Promise.resolve(checkJsonText(raw));
    const { thread, pending } = this.started();
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      pending.set(id, { resolve, reject });
      thread.postMessage({ id, bytes: raw } satisfies CheckRequest);
    });
  }

  async close(): Promise<void> {
    await this.current?.thread.terminate();
  }

  private started() {
    if (this.current) return this.current;
    const thread = typeScriptThread(new URL('./json-checker-thread.ts', import.meta.url));
    const pending = new Map<number, Waiter>();
    thread.unref();
    thread.on('message', ({ id, fault }: CheckReply) => {
      pending.get(id)?.resolve(fault);
      pending.delete(id);
    });
    // A thread that died is replaced on the next check; the checks it held are retried by their senders.
    const failAll = () => {
      if (this.current?.thread === thread) this.current = undefined;
      for (const waiter of pending.values()) waiter.reject(retryable('the body could not be checked; retry'));
      pending.clear();
    };
    thread.on('error', failAll);
    thread.on('exit', failAll);
    this.current = { thread, pending };
    return this.current;
  }
}
