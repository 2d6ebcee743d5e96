import type { RunStore, Run, Step } from '../../engine/store/index.ts';

export type RunRead = { run: Run; steps: Step[] };

/**
 * Reads a run (25 ms apart at first, then up to 500 ms) until `done` says it holds what the caller
 * waits for, or `waitMs` has passed; returns the last read (undefined at once for a run that does not exist). The store is the only channel: it works
 * whichever process runs the run.
 */
export async function watchRun(
  store: Pick<RunStore, 'getRun'>,
  tenantId: string,
  runId: string,
  waitMs: number,
  done: (found: RunRead) => boolean,
): Promise<RunRead | undefined> {
  const deadline = Date.now() + waitMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
    const found = await store.getRun(tenantId, runId);
    if (!found || done(found)) return found;
    if (Date.now() + delay > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
