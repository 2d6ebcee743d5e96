import { RedisUnavailableError } from './unavailable.ts';

/**
 * BullMQ waits for a connection indefinitely; intake must answer within a sender's window
 * (webhook senders commonly wait about 5 s), so an enqueue that does not complete in time counts as failed.
 */
export const ENQUEUE_TIMEOUT_MS = 3000;

/**
 * A Redis call that must answer within ENQUEUE_TIMEOUT_MS, or fail (BullMQ itself would wait for a connection
 * forever).
 */
export async function withinEnqueueTimeout<T>(call: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RedisUnavailableError(`Redis did not ${what} within ${ENQUEUE_TIMEOUT_MS} ms`)),
      ENQUEUE_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
