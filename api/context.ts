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
}
