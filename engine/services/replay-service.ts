import {
  DEFAULT_REPLAY_RATE,
  LOWEST_PRIORITY,
  newId,
  type Replay,
  REPLAY_COUNT_LIMIT,
  type ReplayFilter,
  ValidationError,
} from '../model/index.ts';
import type { Page, PageRequest, Store, StoredReplayFilter } from '../store/index.ts';
import { found, type Reference, requireOwned } from './references.ts';

/** What a bulk replay is asked for; `requestKey` names it, so that asking again answers the same one. */
export interface ReplayRequest {
  /** Runs that failed unless `status` says otherwise. */
  filter?: Partial<ReplayFilter>;
  ratePerSecond?: number;
  redoCompletedSteps?: boolean;
  /** Of its runs among the tenant's waiting runs: the lowest (5) unless asked. */
  priority?: number;
  requestKey: string | null;
}

/** The fields of a filter that a batch's replay cannot have: a batch's tasks are the batch's, whatever their flow. */
const NOT_WITH_BATCH = ['flowId', 'receivedFrom', 'receivedTo'] as const;

/**
 * Bulk replays: every message whose latest run failed (or was handled) and that a filter matches, run again at a
 * bounded rate. Made here, worked off by the workers (ReplayRunner); field errors name the request's fields.
 */
export class ReplayService {
  constructor(private readonly store: Store) {}

  /** How many messages the filter matches now, counted up to REPLAY_COUNT_LIMIT (`exact` false past it). */
  async count(tenantId: string, request: Pick<ReplayRequest, 'filter'>): Promise<{ count: number; exact: boolean }> {
    const count = await this.store.countReplayable(tenantId, await this.checkedFilter(tenantId, request.filter));
    return { count: Math.min(count, REPLAY_COUNT_LIMIT), exact: count <= REPLAY_COUNT_LIMIT };
  }

  /** A running replay of what the filter matches now, or the one made before with the same request key. */
  async start(tenantId: string, request: ReplayRequest): Promise<{ replay: Replay; created: boolean }> {
    return this.store.createReplay(tenantId, {
      id: newId(),
      requestKey: request.requestKey,
      filter: await this.checkedFilter(tenantId, request.filter),
      ratePerSecond: request.ratePerSecond ?? DEFAULT_REPLAY_RATE,
      redoCompletedSteps: request.redoCompletedSteps ?? false,
      priority: request.priority ?? LOWEST_PRIORITY,
    });
  }

  list(tenantId: string, page: PageRequest): Promise<Page<Replay>> {
    return this.store.listReplays(tenantId, page);
  }

  async get(tenantId: string, id: string): Promise<Replay> {
    return found(`replay ${id}`, await this.store.getReplay(tenantId, id));
  }

  /** No more runs are started; those it started go on. A finished replay is answered as it ended. */
  async cancel(tenantId: string, id: string): Promise<Replay> {
    return found(`replay ${id}`, await this.store.cancelReplay(tenantId, id));
  }

  /** The filter as kept (failed runs unless it says otherwise), naming only the tenant's own flow or batch. */
  private async checkedFilter(tenantId: string, given: Partial<ReplayFilter> = {}): Promise<StoredReplayFilter> {
    const filter: StoredReplayFilter = { ...given, status: given.status ?? 'failed' };
    if (filter.batchId !== undefined) {
      const errors = NOT_WITH_BATCH.filter((field) => field in filter).map((field) => ({
        path: `$.filter.${field}`,
        message: 'does not go with batchId',
      }));
      if (filter.status !== 'failed') errors.push({ path: '$.filter.status', message: 'must be failed with batchId' });
      if (errors.length > 0) throw new ValidationError('Invalid request', errors);
    }
    const references: Reference[] = [
      ...(filter.flowId === undefined ? [] : [{ kind: 'flow' as const, id: filter.flowId, path: '$.filter.flowId' }]),
      ...(filter.batchId === undefined
        ? []
        : [{ kind: 'batch' as const, id: filter.batchId, path: '$.filter.batchId' }]),
    ];
    await requireOwned(this.store, tenantId, references, 'the filter names what this tenant does not have');
    return filter;
  }
}
