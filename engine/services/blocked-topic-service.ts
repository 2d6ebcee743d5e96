import { type BlockedTopic, NotFoundError } from '../model/index.ts';
import type { HeldChoice, RunService } from './run-service.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';

/**
 * Blocked topics: deliveries of a blocked topic are still verified, recorded and answered, but their runs are
 * held until it is unblocked.
 */
export class BlockedTopicService {
  constructor(
    private readonly store: Store,
    private readonly runs: Pick<RunService, 'settleHeld'>,
  ) {}

  /** Blocked from now on; when it was already, its reason is updated. */
  block(tenantId: string, topic: string, reason: string | null) {
    return this.store.blockTopic(tenantId, topic, reason);
  }

  /** With the number of messages each holds. */
  list(tenantId: string, page: PageRequest): Promise<Page<BlockedTopic>> {
    return this.store.listBlockedTopics(tenantId, page);
  }

  /** Unblocked; the messages it held are released in arrival order, discarded or kept, as `held` says. */
  async unblock(tenantId: string, topic: string, held: HeldChoice) {
    if (!(await this.store.unblockTopic(tenantId, topic))) throw new NotFoundError(`the topic ${topic} is not blocked`);
    return this.runs.settleHeld(tenantId, held, { heldBy: 'topic', topic }, `discarded when ${topic} was unblocked`);
  }
}
