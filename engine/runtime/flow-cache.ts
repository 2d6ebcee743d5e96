import { LRUCache } from 'lru-cache';
import { NotFoundError } from '../model/index.ts';
import { compileFlow, type CompiledFlow, type CompileOptions } from '../flow/index.ts';
import type { FlowStore } from '../store/index.ts';

/**
 * Compiled published versions, keyed by tenant, flow and version. Versions are immutable, so an
 * entry never goes stale; the map is bounded (least recently used out) and a miss compiles once
 * even when many runs ask at the same time.
 */
export class CompiledFlowCache {
  private readonly entries: LRUCache<string, Promise<CompiledFlow>>;

  constructor(
    private readonly store: FlowStore,
    private readonly options: CompileOptions,
    capacity = 1000,
  ) {
    this.entries = new LRUCache({ max: capacity });
  }

  get(tenantId: string, flowId: string, version: number): Promise<CompiledFlow> {
    const key = `${tenantId}\0${flowId}\0${version}`;
    let entry = this.entries.get(key);
    if (!entry) {
      entry = this.load(tenantId, flowId, version);
      this.entries.set(key, entry);
      entry.catch(() => this.entries.delete(key));
    }
    return entry;
  }

  private async load(tenantId: string, flowId: string, version: number) {
    const stored = await this.store.getFlowVersion(tenantId, flowId, version);
    if (!stored) throw new NotFoundError(`flow ${flowId} has no version ${version} (deleted?)`);
    return compileFlow(stored.document, this.options);
  }
}
