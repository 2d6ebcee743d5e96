import type { DataSpaceStore } from '../store/index.ts';

/** `$document(space, key)`: a data space document's value, undefined when absent (or not named by strings). */
export type DocumentReader = (space: unknown, key: unknown) => Promise<unknown> | undefined;

/** A reader for one pass of one tenant's run: each document is read once, however often expressions ask. */
export function documentReader(store: Pick<DataSpaceStore, 'getDocument'>, tenantId: string): DocumentReader {
  const read = new Map<string, Promise<unknown>>();
  return (space, key) => {
    if (typeof space !== 'string' || (typeof key !== 'string' && typeof key !== 'number')) return undefined;
    const id = `${space}\0${key}`;
    let found = read.get(id);
    if (!found) {
      found = store.getDocument(tenantId, space, String(key)).then((document) => document?.value);
      read.set(id, found);
    }
    return found;
  };
}
