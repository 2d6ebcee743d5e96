import type { Destination } from '../../model/index.ts';
import type { SealedValue } from '../../secrets/index.ts';

import type { Page, PageRequest } from './common.ts';

/** Destinations: settings in the clear, credentials sealed. */
export interface DestinationStore {
  /** Create or replace a destination (settings in the clear, credentials sealed). */
  putDestination(
    tenantId: string,
    destination: NewDestination,
  ): Promise<{ destination: Destination; created: boolean }>;
  getDestination(tenantId: string, name: string): Promise<Destination | undefined>;
  listDestinations(tenantId: string, page: PageRequest): Promise<Page<Destination>>;
  deleteDestination(tenantId: string, name: string): Promise<boolean>;
  /** A destination with its sealed credentials, for the run that uses it. */
  getSealedDestination(
    tenantId: string,
    name: string,
  ): Promise<{ destination: Destination; sealedCredentials: SealedValue } | undefined>;
}

export interface NewDestination {
  name: string;
  type: Destination['type'];
  settings: Record<string, unknown>;
  credentialsSet: string[];
  sealedCredentials: SealedValue;
}
