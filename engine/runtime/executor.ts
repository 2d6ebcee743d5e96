import type { Logger } from 'pino';
import type { HttpClient } from '../outbound/index.ts';
import { NotFoundError, permanent, toErrorRecord } from '../model/index.ts';
import type { CompiledFlow } from '../flow/index.ts';
import type { ActionRunner } from '../plugins/index.ts';
import { secretContext, type Keyring } from '../secrets/index.ts';
import {
  type BatchStore,
  type DataSpaceStore,
  type DestinationStore,
  type FlowStore,
  type MessageStore,
  isTerminal,
  type Run,
  type RunStore,
} from '../store/index.ts';
import type { CompiledFlowCache } from './flow-cache.ts';
import type { PassOutcome } from './pass-outcome.ts';
import { RunPass } from './run-pass.ts';
import { StoreSink } from './store-sink.ts';

export interface ExecutorOptions {
  store: RunStore & BatchStore & DataSpaceStore & DestinationStore & FlowStore & MessageStore;
  /** Runs tenants' actions (`action:<name>` nodes). */
  actions: ActionRunner;
  flows: CompiledFlowCache;
  keyring: Keyring;
  logger: Logger;
  /** The operations' outbound HTTP (ctx.http), with this deployment's address policy. */
  http: HttpClient;
  /** Largest JSON a node may store as its output. */
  maxOutputBytes: number;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
  /** Queues runs this pass created (a fan-out node's tasks, a called flow's run). */
  enqueue(runs: Run[]): Promise<void>;
  /** Takes a waiting run up now: the caller of a run that ended. */
  wake(runId: string): Promise<void>;
}

/**
 * Runs one pass over a run: nodes in graph order, each completed node checkpointed, so a later pass
 * (a retry, or another worker after a crash) resumes after the last completed node and never
 * repeats one. Run status is derived from what is stored, and a finished run is never changed.
 */
export class Executor {
  constructor(private readonly options: ExecutorOptions) {}

  async execute(
    job: { tenantId: string; runId: string; flowId: string; flowVersion: number },
    shutdown: AbortSignal,
    progress: (percent: number) => void = () => {},
  ): Promise<PassOutcome> {
    const { store, keyring } = this.options;
    const { tenantId, runId } = job;
    let flow: CompiledFlow;
    try {
      // The compiled version is cached: knowing what the run reads, one statement fetches it all.
      flow = await this.options.flows.get(tenantId, job.flowId, job.flowVersion);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const record = toErrorRecord(permanent(error.message));
      await store.saveProgress(tenantId, runId, [], { status: 'failed', error: record });
      return { kind: 'finished', status: 'failed', error: record };
    }
    const state = await store.beginRun(tenantId, runId, flow.references);
    if (!state) return { kind: 'gone' };
    if (isTerminal(state.run.status))
      return { kind: 'finished', status: state.run.status, error: state.run.error ?? undefined };
    const secrets = Object.fromEntries(
      state.sealedSecrets.map((sealed) => [sealed.name, keyring.open(sealed, secretContext(tenantId, sealed.name))]),
    );
    const outcome = await new RunPass(
      this.options,
      new StoreSink(store, this.options.enqueue),
      state,
      flow,
      secrets,
      shutdown,
      progress,
    ).execute();
    // A called run that ended wakes its caller, which waits for it.
    const { parentRunId } = state.run;
    if (outcome.kind === 'finished' && parentRunId)
      await this.options.wake(parentRunId).catch((error: unknown) => {
        this.options.logger.warn({ err: error, runId, parentRunId }, 'could not wake the calling run');
      });
    return outcome;
  }
}
