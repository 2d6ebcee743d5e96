/** A Redis call that failed for want of Redis: it did not answer in time, or there was no connection to send it on. */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}

/**
 * ioredis's own words when it has no connection to send a command on (it throws plain errors, and a class of its own
 * only for the retries per request).
 */
const NO_CONNECTION = /^(Stream isn't writeable|Connection is closed\.|Reached the max retries per request limit)/;

/** Whether a failure is Redis's absence (an outage, a restart), not the call's own fault. */
export function isRedisUnavailable(error: unknown): boolean {
  return (
    error instanceof RedisUnavailableError ||
    (error instanceof Error && (error.name === 'MaxRetriesPerRequestError' || NO_CONNECTION.test(error.message)))
  );
}
