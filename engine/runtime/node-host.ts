import type { Logger } from 'pino';
import type { CompiledNode } from '../flow/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import type { ActionRunner, MessageInput } from '../plugins/index.ts';
import type { Keyring } from '../secrets/index.ts';
import type { BatchStore, DataSpaceStore, DestinationStore, Run } from '../store/index.ts';
import type { SecretRedactor } from './redact.ts';
import type { RunSink } from './run-sink.ts';

/**
 * What a pass (RunPass, the run's lifecycle) lends the node it runs: the run and its input, the
 * outputs so far, its memoized steps, and the services a node reaches out with.
 */
export interface NodeHost {
  readonly run: Run;
  readonly input: MessageInput;
  readonly outputs: Record<string, unknown>;
  readonly sink: RunSink;
  /** Outbound HTTP on sockets of this run's tenant only. */
  readonly http: HttpClient;
  /** Every secret value this pass has opened: redacted from what it stores. */
  readonly redactor: SecretRedactor;
  readonly shutdown: AbortSignal;
  readonly progress: (percent: number) => void;
  readonly options: {
    store: BatchStore & DataSpaceStore & DestinationStore;
    actions: ActionRunner;
    keyring: Keyring;
    logger: Logger;
  };
  /** A named step of `node`, run once per run: its result is checkpointed and handed back on later passes. */
  subStep<T>(node: CompiledNode, name: string, fn: () => Promise<T>): Promise<T>;
  /** The pass's logger (tenant, flow and run named). */
  log(): Logger;
}
