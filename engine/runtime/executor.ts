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
  type RunState,
  type RunStore,
} from '../store/index.ts';
import { parseTraceparent, type Tracer, type TraceSpan } from '../telemetry/index.ts';
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
  /** Whether a step keeps the requests its operation sent and their answers (RECORD_EXCHANGES). */
  recordExchanges: boolean;
  /** Cap of any retry delay. */
  maxRetryDelayMs: number;
  /** Queues runs this pass created (a fan-out node's tasks, a called flow's run). */
  enqueue(runs: Run[]): Promise<void>;
  /** Takes a waiting run of the tenant up now: the caller of a run that ended. */
  wake(tenantId: string, runId: string): Promise<void>;
  tracer: Tracer;
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
    const span = this.options.tracer.enabled ? this.runSpan(state, flow) : undefined;
    let outcome: PassOutcome;
    try {
      outcome = await new RunPass(
        this.options,
        new StoreSink(store, this.options.flows, this.options.enqueue),
        state,
        flow,
        secrets,
        shutdown,
        progress,
        span?.context,
      ).execute();
    } catch (error) {
      span?.end('error');
      throw error;
    }
    if (span) {
      span.set({ 'tributary.run.status': outcome.kind === 'finished' ? outcome.status : outcome.kind });
      span.end(outcome.kind === 'finished' && outcome.status === 'failed' ? outcome.error?.kind : undefined);
    }
    // A called run that ended wakes its caller, which waits for it.
    const { parentRunId } = state.run;
    if (outcome.kind === 'finished' && parentRunId)
      await this.options.wake(state.run.tenantId, parentRunId).catch((error: unknown) => {
        this.options.logger.warn({ err: error, runId, parentRunId }, 'could not wake the calling run');
      });
    return outcome;
  }

  /**
   * The span of one attempt at a run (messaging conventions: `process`), in the trace its message was
   * accepted in and linked to that span: every attempt, after a retry, a wait or a crash, joins that trace.
   */
  private runSpan({ run, traceparent }: RunState, flow: CompiledFlow): TraceSpan {
    const accepted = parseTraceparent(traceparent);
    return this.options.tracer.start(`process ${flow.key}`, {
      kind: 'consumer',
      parent: accepted,
      links: accepted && [accepted],
      attributes: {
        'messaging.system': 'tributary',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': flow.key,
        'messaging.message.id': run.messageId,
        'tributary.tenant.id': run.tenantId,
        'tributary.flow.id': run.flowId,
        'tributary.flow.key': flow.key,
        'tributary.flow.version': run.flowVersion,
        'tributary.run.id': run.id,
        'tributary.run.attempt': run.attempts,
        'tributary.run.replay_of': run.replayOf ?? undefined,
      },
    });
  }
}
