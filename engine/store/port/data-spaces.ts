import type { DataDocument, DataSpace } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** Data spaces and their documents. */
export interface DataSpaceStore {
  putDataSpace(
    tenantId: string,
    name: string,
    description: string | null,
  ): Promise<{ space: DataSpace; created: boolean }>;
  getDataSpace(tenantId: string, name: string): Promise<DataSpace | undefined>;
  listDataSpaces(tenantId: string, page: PageRequest): Promise<Page<DataSpace>>;
  /** The space and all its documents. */
  deleteDataSpace(tenantId: string, name: string): Promise<boolean>;
  /** Create or replace documents of an existing space, in one statement; undefined if there is no such space. */
  putDocuments(
    tenantId: string,
    space: string,
    documents: Array<{ key: string; value: unknown }>,
  ): Promise<{ created: number; updated: number } | undefined>;
  getDocument(tenantId: string, space: string, key: string): Promise<DataDocument | undefined>;
  listDocuments(
    tenantId: string,
    space: string,
    filter: { prefix?: string },
    page: PageRequest,
  ): Promise<Page<DataDocument>>;
  deleteDocument(tenantId: string, space: string, key: string): Promise<boolean>;
}
