/**
 * The budget a request draws on: by default one per tenant and origin; a name shares one across hosts (two hosts of
 * one ERP account).
 */
export interface BudgetChoice {
  name?: string;
  /**
   * What the outside account allows, as configured where the request comes from (a destination's `limits`; `{}`: no
   * limit). The budget keeps them for every request that draws on it: a request without `limits` (an http.request
   * node naming the budget) obeys those the budget was last given.
   */
  limits?: BudgetLimits;
  /** Where the account prices requests (Shopify's cost points): what this one is expected to cost... */
  cost?: number;
  /** ... unless a request of this kind (a query document) was priced before, by any process: then that. */
  costKind?: string;
}

/** An outside account's limits: the window never exceeds `concurrency`; under `ratePerSecond`, each request costs a point. */
export interface BudgetLimits {
  concurrency?: number;
  ratePerSecond?: number;
}

/** An account's bucket as an answer reports it (Shopify's `throttleStatus`), and what the request cost. */
export interface BudgetPrice {
  available: number;
  maximum: number;
  restoreRate: number;
  /** What the account asked to be there for the request (Shopify's requested cost). */
  cost?: number;
  /** What it took in the end (Shopify's actual cost; 0 for a request it refused): the rest it gave back. */
  charged?: number;
}

/** How an exchange went, for its budget: `overloaded` narrows the window, `ok` widens it, `neutral` neither. */
export type BudgetOutcome = 'ok' | 'overloaded' | 'neutral';

/** A request admitted to its budget; given back once it is answered. */
export interface BudgetGrant {
  readonly budget: string;
  readonly id: string;
  readonly startedAt: number;
  readonly limits?: BudgetLimits;
  readonly cost: number;
  readonly costKind?: string;
  /** How long it waited for its turn in place (0: admitted at once). */
  readonly waitedMs: number;
}

/** What a run's requests waited for their turns on budgets so far, in ms. */
export interface BudgetWaits {
  ms: number;
}

export interface EnterOptions {
  /** How long the request may hold its slot without giving it back (then its worker is taken for dead). */
  leaseMs: number;
  /**
   * Whether the run may wait for a turn far off as a delayed job (`later`); otherwise it waits in place: its node
   * sent requests already in this attempt, which starting the node again would send again.
   */
  mayWaitAway: boolean;
  /** Ends a wait in place (the node timed out, the worker shuts down). */
  signal?: AbortSignal;
  /** A request sent again (its account refused it for its load): it goes to the head of the line. */
  again?: boolean;
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
    options: EnterOptions,
  ): Promise<BudgetGrant>;
  leave(grant: BudgetGrant, outcome: BudgetOutcome, retryAfterMs?: number, price?: BudgetPrice): void;
}
