import type { Replay, ReplayFilter, Run } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** A replay's filter as kept: the status it looks for is always set. */
export type StoredReplayFilter = ReplayFilter & { status: 'failed' | 'handled' };

/** What a bulk replay is made of: its filter, its rate, whether it redoes completed steps. */
export interface NewReplay {
  id: string;
  requestKey: string | null;
  filter: StoredReplayFilter;
  ratePerSecond: number;
  redoCompletedSteps: boolean;
  priority: number;
}

/** Bulk replays: made over the API, worked off by the workers a page a second. */
export interface ReplayStore {
  /** How many messages the filter matches now (a dry run), counted up to one past REPLAY_COUNT_LIMIT. */
  countReplayable(tenantId: string, filter: StoredReplayFilter): Promise<number>;
  /**
   * A running replay of what the filter matches now (`total`). With a `requestKey` the tenant already used,
   * nothing is made: the replay made with it is returned (`created` false). A ConflictError when the tenant
   * has MAX_RUNNING_REPLAYS running.
   */
  createReplay(tenantId: string, replay: NewReplay): Promise<{ replay: Replay; created: boolean }>;
  getReplay(tenantId: string, id: string): Promise<Replay | undefined>;
  listReplays(tenantId: string, page: PageRequest): Promise<Page<Replay>>;
  /** Stops a running replay; undefined if there is none (a finished one is returned as it is). */
  cancelReplay(tenantId: string, id: string): Promise<Replay | undefined>;
  /**
   * One page of one due replay of any tenant (a worker's sweep): at most its rate of new queued runs, one
   * for each next match whose flow has an active version, each naming the run it replays and carrying over the
   * steps that run completed (unless the replay redoes them); the replay's progress moves on in the same
   * statement, and it is not due again for a second. A run another replay or retry is taking is skipped: no
   * message is replayed twice at once, and a finished replay's `replayed` and `skipped` add up to its `total`. A
   * replay of a batch's failed tasks tries them as the batch's retry does. `runIds` give the new runs' ids (as
   * many as the largest rate). Undefined when no replay is due.
   */
  replayNextPage(runIds: string[]): Promise<{ replay: Replay; runs: Run[] } | undefined>;
}
