import type { DestinationType, FamilyRoute, WebhookSubscriber } from '../engine/plugins/index.ts';
import type { CompileOptions } from '../engine/flow/index.ts';
import type { Intake } from '../engine/intake/index.ts';
import type { QueueAdmin, TenantMoves } from '../engine/queue/index.ts';
import type { MaintenanceMode } from '../engine/limits/index.ts';
import type { Keyring } from '../engine/secrets/index.ts';
import type { EngineServices } from '../engine/services/index.ts';
import type { Store } from '../engine/store/index.ts';

/** What the routes use of the engine: the use cases, and the store for plain reads. */
export interface ApiContext extends EngineServices {
  store: Store;
  intake: Intake;
  /** The queues themselves, for operators. */
  queues: QueueAdmin;
  /** Operators' moves of tenants between the run path's slot groups. */
  moves: TenantMoves;
  keyring: Keyring;
  compile: CompileOptions;
  maintenance: MaintenanceMode;
  /** The destination types the operation families declare, by type. */
  destinationTypes: Record<string, DestinationType>;
  /** Per destination type: who registers flow URLs as webhooks there. */
  webhookSubscribers: Record<string, WebhookSubscriber>;
  /** The routes the operation families serve beside the API (a vendor's own contract). */
  familyRoutes: FamilyRoute[];
  /** The public base URL flow URLs start with (known once the server listens). */
  baseUrl(): string;
  /** What is running: the product version and the build's commit. */
  build: { version: string; commit: string | null };
}
