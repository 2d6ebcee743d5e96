import type {
  BlockedTopic,
  HoldReason,
  MessageInfo,
  MessageStatus,
  Message,
  Run,
  RunConcurrency,
  RunDebounce,
  RunStatus,
} from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/**
 * Inbound messages and what became of them: intake, the MessageInfo and MessageQueue views, replays and retries,
 * blocked topics and held runs.
 */
export interface MessageStore {
  /**
   * Record inbound messages with their runs, all in one statement. A run is `held` (no job is to be
   * queued) when its tenant is suspended or its message's topic is blocked; the decision is taken
   * in the same statement, against the rows that suspend or block, so it cannot race a resume or
   * an unblock. A message whose delivery id was already recorded for its flow is a duplicate: it
   * is recorded without a body, pointing at the first, and the first one's run is returned.
   * Results come in the order of `messages`. A new message whose flow version is not the flow's active
   * one (deactivated, deleted or replaced since the caller resolved it) is not recorded: its result is
   * undefined.
   */
  acceptMessages(messages: Array<{ message: NewMessage; runId: string }>): Promise<Array<AcceptedMessage | undefined>>;
  /** Messages newest first; bodies over `bodyCapBytes` are left out (`bodyTruncated`). */
  listMessages(
    tenantId: string,
    filter: MessageFilter,
    page: PageRequest,
    bodyCapBytes: number,
  ): Promise<Page<MessageInfo>>;
  getMessage(
    tenantId: string,
    id: string,
    bodyCapBytes: number,
  ): Promise<{ message: MessageInfo; runs: Run[] } | undefined>;
  /**
   * A new queued run of the message on its flow's active version, naming the run it replays, with the steps that
   * run completed carried over when both run the same version (unless `redoCompletedSteps`). Refused
   * (ConflictError) for a duplicate, a batch item, a message whose latest run is unfinished (or being replayed at
   * the same time), or a flow without an active version; NotFoundError when there is no such message.
   */
  replayMessage(tenantId: string, messageId: string, runId: string, redoCompletedSteps?: boolean): Promise<Run>;
  /** The tenant's backlog: unfinished runs, finished runs and messages since `since`, the oldest waiting run. */
  backlog(tenantId: string, since: string): Promise<Backlog>;
  /**
   * A new queued run, on the flow's active version, for each message of the flow whose latest run
   * failed (at most `limit`, oldest first); `more` when others remain. Batch items are left to
   * their batch's retry.
   */
  retryFailedRuns(
    tenantId: string,
    flowId: string,
    newId: () => string,
    limit: number,
  ): Promise<{ runs: Run[]; more: boolean }>;
  blockTopic(
    tenantId: string,
    topic: string,
    reason: string | null,
  ): Promise<{ blockedTopic: BlockedTopic; created: boolean }>;
  listBlockedTopics(tenantId: string, page: PageRequest): Promise<Page<BlockedTopic>>;
  unblockTopic(tenantId: string, topic: string): Promise<boolean>;
  /**
   * Held runs (of a hold reason and topic, when given) whose hold no longer applies become queued,
   * and are returned in arrival order to be enqueued; those still suspended or blocked stay held
   * (with the reason that now applies). One page: the `limit` held runs after `after` (run ids in
   * arrival order); `last` is where the next page starts, undefined after the last.
   */
  releaseHeld(
    tenantId: string,
    filter: HeldFilter,
    page: { after?: string; limit: number },
  ): Promise<{ released: Run[]; last?: string }>;
  /** At most `limit` held runs become `cancelled` with `reason`; returns how many. */
  discardHeld(tenantId: string, filter: HeldFilter, reason: string, limit: number): Promise<number>;
  /** Every tenant's held runs: how many, and how long the oldest has waited (for operators' metrics). */
  heldRuns(): Promise<Record<string, { runs: number; oldestSeconds: number }>>;
}

export interface MessageFilter {
  flowId?: string;
  status?: MessageStatus;
  topic?: string;
  receivedFrom?: string;
  receivedTo?: string;
}

export interface Backlog {
  since: string;
  /** Per run status: unfinished ones all, finished ones created since `since`. */
  runs: Record<RunStatus, number>;
  /** Per message status, of messages received since `since`. */
  messages: Record<MessageStatus, number>;
  oldestWaiting: {
    runId: string;
    flowId: string;
    status: 'queued' | 'waiting';
    createdAt: string;
    ageMs: number;
  } | null;
}

export interface HeldFilter {
  heldBy?: HoldReason;
  topic?: string;
}

export type NewMessage = Omit<Message, 'receivedAt'> & {
  /** A message a call node sends: its run knows the calling run, one call deeper. */
  parent?: { runId: string; depth: number };
  /** The trace context it was accepted in (a W3C traceparent): its runs continue that trace. */
  traceparent?: string;
  /** Its run's keys, evaluated over it as it was accepted (flowControl). */
  concurrency?: RunConcurrency;
  debounce?: RunDebounce;
};

export interface AcceptedMessage {
  duplicate: boolean;
  messageId: string;
  run: Run;
}
