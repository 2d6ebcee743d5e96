/** Outcomes of a delivery at a flow URL (or the adapter route), as counted per tenant. */
export type DeliveryOutcome =
  | 'accepted'
  | 'held'
  | 'duplicate'
  | 'no-flow'
  | 'unverified'
  | 'invalid'
  | 'maintenance'
  | 'throttled'
  | 'not-stored';

/**
 * What the engine reports as it works. An adapter exports it (Prometheus, in bin/); the engine
 * only calls these, synchronously and cheaply, on its hot paths.
 */
export interface EngineMetrics {
  delivery(tenantId: string, outcome: DeliveryOutcome): void;
  /** A run attempt ended: its status after the attempt, and how long the attempt took. */
  runAttempt(tenantId: string, status: string, seconds: number): void;
  /** A job's lock expired (its worker died or hung) and the job was taken back to run again. */
  jobStalled(queue: string): void;
}
