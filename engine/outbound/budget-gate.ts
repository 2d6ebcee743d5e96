/**
 * The budget a request draws on: by default one per tenant and origin; a name shares one across hosts (two hosts of
 * one ERP account). `concurrency` is what the outside account allows in flight, where known: the window never
 * exceeds it.
 */
export interface BudgetChoice {
  name?: string;
  concurrency?: number;
}

/** How an exchange went, for its budget: `overloaded` narrows the window, `ok` widens it, `neutral` neither. */
export type BudgetOutcome = 'ok' | 'overloaded' | 'neutral';

/** A request admitted to its budget; given back once it is answered. */
export interface BudgetGrant {
  readonly budget: string;
  readonly id: string;
  readonly startedAt: number;
  readonly concurrency?: number;
}

/**
 * Admits the outbound requests of runs to shared, adaptive budgets (engine/limits/outbound-budgets.ts). `enter`
 * resolves when the request may go (a run close to its turn waits for it a moment), or throws a `later`
 * OperationError: the run waits for its turn holding no worker slot and is woken when it comes.
 */
export interface OutboundGate {
  enter(
    caller: { tenantId: string; runId: string },
    budget: string,
    choice: BudgetChoice | undefined,
    leaseMs: number,
    signal?: AbortSignal,
  ): Promise<BudgetGrant>;
  leave(grant: BudgetGrant, outcome: BudgetOutcome, retryAfterMs: number | undefined): void;
}
