import type { WebhookSubscriber } from '../engine/destinations.ts';
import type { CompileOptions } from '../engine/flow/compile.ts';
import type { Intake } from '../engine/intake.ts';
import type { Keyring } from '../engine/secrets/keyring.ts';
import type { Store } from '../engine/store/port.ts';

/** What the routes use of the engine. */
export interface ApiContext {
  store: Store;
  intake: Intake;
  keyring: Keyring;
  compile: CompileOptions;
  /** Per destination type: who registers flow URLs as webhooks there. */
  webhookSubscribers: Record<string, WebhookSubscriber>;
  /** The public base URL flow URLs start with (known once the server listens). */
  baseUrl(): string;
}
