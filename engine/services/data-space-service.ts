import { type DataDocument, type DataSpace, NotFoundError } from '../model/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import type { NamedRecords } from './named-records.ts';
import { found } from './references.ts';

/** A document to write: its key in the space and its JSON value. */
export interface DocumentWrite {
  key: string;
  value: unknown;
}

/** Data spaces: a tenant's named collections of JSON documents, which flows read and write by key. */
export class DataSpaceService implements NamedRecords<DataSpace> {
  constructor(private readonly store: Store) {}

  /** The space created, or its description changed. */
  put(tenantId: string, name: string, description: string | null): Promise<{ space: DataSpace; created: boolean }> {
    return this.store.putDataSpace(tenantId, name, description);
  }

  list(tenantId: string, page: PageRequest): Promise<Page<DataSpace>> {
    return this.store.listDataSpaces(tenantId, page);
  }

  get(tenantId: string, name: string): Promise<DataSpace | undefined> {
    return this.store.getDataSpace(tenantId, name);
  }

  /** The space and all its documents. */
  remove(tenantId: string, name: string): Promise<boolean> {
    return this.store.deleteDataSpace(tenantId, name);
  }

  async listDocuments(
    tenantId: string,
    space: string,
    filter: { prefix?: string },
    page: PageRequest,
  ): Promise<Page<DataDocument>> {
    found(`data space ${space}`, await this.store.getDataSpace(tenantId, space));
    return this.store.listDocuments(tenantId, space, filter, page);
  }

  /** Documents of the space created or replaced, all in one statement. */
  async putDocuments(
    tenantId: string,
    space: string,
    documents: DocumentWrite[],
  ): Promise<{ created: number; updated: number }> {
    return found(`data space ${space}`, await this.store.putDocuments(tenantId, space, documents));
  }

  /** One document created or replaced, as it is now. */
  async putDocument(tenantId: string, space: string, { key, value }: DocumentWrite) {
    const { created } = await this.putDocuments(tenantId, space, [{ key, value }]);
    return { document: await this.getDocument(tenantId, space, key), created: created === 1 };
  }

  async getDocument(tenantId: string, space: string, key: string): Promise<DataDocument> {
    return found(`document ${key} in ${space}`, await this.store.getDocument(tenantId, space, key));
  }

  async deleteDocument(tenantId: string, space: string, key: string): Promise<void> {
    if (!(await this.store.deleteDocument(tenantId, space, key)))
      throw new NotFoundError(`no document ${key} in ${space}`);
  }
}
