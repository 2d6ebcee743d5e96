import type { DestinationType, WebhookSubscriber } from '../engine/plugins/index.ts';
import type { CompileOptions } from '../engine/flow/index.ts';
import type { HttpClient } from '../engine/outbound/index.ts';
import type { Intake } from '../engine/intake/index.ts';
import type {
  QueueAdmin,
  RunService,
  MaintenanceMode,
  FlowSchedules,
  TenantLimitsInRedis,
} from '../engine/queue/index.ts';
import type { TestRunner } from '../engine/runtime/index.ts';
import type { Keyring } from '../engine/secrets/index.ts';
import type { Store } from '../engine/store/index.ts';

/** What the routes use of the engine. */
export interface ApiContext {
  store: Store;
  intake: Intake;
  /** Runs an API call starts: replays, retries, held runs released. */
  runs: RunService;
  /** The queues themselves, for operators. */
  queues: QueueAdmin;
  keyring: Keyring;
  compile: CompileOptions;
  /** Kept in step with the active version of every scheduled flow. */
  schedules: FlowSchedules;
  /** Where operators' per-tenant limits are enforced. */
  tenantLimits: TenantLimitsInRedis;
  maintenance: MaintenanceMode;
  /** Runs drafts for the Test API. */
  testRunner: TestRunner;
  /** The destination types the operation families declare, by type. */
  destinationTypes: Record<string, DestinationType>;
  /** Per destination type: who registers flow URLs as webhooks there. */
  webhookSubscribers: Record<string, WebhookSubscriber>;
  /** Outbound HTTP for calls made on a tenant's behalf (webhook registration), as the workers' is. */
  http: HttpClient;
  /** The public base URL flow URLs start with (known once the server listens). */
  baseUrl(): string;
  /** What is running: the product version and the build's commit. */
  build: { version: string; commit: string | null };
}

/** After the active version of a flow changed (or the flow went): its URL and its schedule follow. */
export async function activeVersionChanged(
  { intake, schedules }: Pick<ApiContext, 'intake' | 'schedules'>,
  tenantId: string,
  flow: { id: string; key: string },
) {
  intake.invalidate(tenantId, flow.key);
  await schedules.sync(tenantId, flow.id);
}
