/** The engine's metrics. */
export type { DeliveryOutcome, EngineMetrics } from './metrics.ts';
