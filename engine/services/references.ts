import { NotFoundError } from '../model/index.ts';
import type { Store } from '../store/index.ts';

/** What an input may name by id, and how each is looked up among a tenant's own. */
const KINDS = {
  flow: { noun: 'a flow', exists: (store: Store, tenantId: string, id: string) => store.getFlow(tenantId, id) },
  batch: { noun: 'a batch', exists: (store: Store, tenantId: string, id: string) => store.getBatch(tenantId, id) },
  alertChannel: {
    noun: 'an alert channel',
    exists: (store: Store, tenantId: string, id: string) => store.getAlertChannel(tenantId, id),
  },
} as const;

/** An id an input names, with the path of its field. */
export interface Reference {
  kind: keyof typeof KINDS;
  id: string;
  path: string;
}

/**
 * An input names the tenant's own records only: another tenant's ids are not found, exactly as ids that never
 * were (a 404, not a 400 that would tell them apart), each with its path.
 */
export async function requireOwned(store: Store, tenantId: string, references: Reference[], message: string) {
  const found = await Promise.all(references.map(({ kind, id }) => KINDS[kind].exists(store, tenantId, id)));
  const errors = references.flatMap(({ kind, path }, index) =>
    found[index] ? [] : [{ path, message: `is not ${KINDS[kind].noun} of this tenant` }],
  );
  if (errors.length > 0) throw new NotFoundError(message, errors);
}

/** The record looked up, or NotFoundError naming `what` ("flow 0192..."). */
export function found<T>(what: string, record: T | undefined): T {
  if (record === undefined) throw new NotFoundError(`no ${what}`);
  return record;
}
