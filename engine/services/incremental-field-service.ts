import { type IncrementalField, NotFoundError } from '../model/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import { found } from './references.ts';

/** How far before its value a poll re-reads unless told otherwise (ties, late writes). */
export const DEFAULT_POLL_OVERLAP_MS = 300_000;

/** Where each polling flow's next poll starts: read, rewound for a backfill, moved forward, or reset. */
export class IncrementalFieldService {
  constructor(private readonly store: Store) {}

  list(tenantId: string, page: PageRequest): Promise<Page<IncrementalField>> {
    return this.store.listIncrementalFields(tenantId, page);
  }

  async get(tenantId: string, flowId: string): Promise<IncrementalField> {
    const field = await this.store.getIncrementalField(tenantId, flowId);
    if (!field) throw new NotFoundError(`flow ${flowId} has no incremental field (it has not polled yet)`);
    return field;
  }

  /** The next poll reads from `value` minus the overlap; a poll running now still finishes its own window. */
  async set(tenantId: string, flowId: string, value: Date, overlapMs = DEFAULT_POLL_OVERLAP_MS) {
    found(`flow ${flowId}`, await this.store.getFlow(tenantId, flowId));
    return this.store.putIncrementalField(tenantId, flowId, {
      field: 'updated_at',
      value: value.toISOString(),
      overlapMs,
    });
  }

  /** The next poll starts from its flow's initial look-back. */
  async reset(tenantId: string, flowId: string): Promise<void> {
    if (!(await this.store.deleteIncrementalField(tenantId, flowId)))
      throw new NotFoundError(`flow ${flowId} has no incremental field`);
  }
}
