/** The engine's metrics and traces: what it reports, never how they are exported. */
export type { DeliveryOutcome, EngineMetrics } from './metrics.ts';
export {
  logFieldsOf,
  noTracer,
  parseTraceparent,
  traceContextHeaders,
  traceparentOf,
  type SpanAttributes,
  type SpanContext,
  type SpanKind,
  type SpanOptions,
  type Tracer,
  type TraceSpan,
} from './tracing.ts';
