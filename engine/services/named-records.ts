import type { Page, PageRequest } from '../store/index.ts';

/**
 * A tenant's records addressed by name (variables, secrets, destinations, data spaces, actions), as they are
 * listed, read and deleted. The owner is a tenant's id, or PLATFORM for the platform's own values.
 */
export interface NamedRecords<Item> {
  list(owner: string, page: PageRequest): Promise<Page<Item>>;
  /** Absent for write-only records. */
  get?(owner: string, name: string): Promise<Item | undefined>;
  /** false when there was none. */
  remove(owner: string, name: string): Promise<boolean>;
}
