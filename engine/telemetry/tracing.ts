/** The W3C trace context of a span: what a `traceparent` header carries. */
export interface SpanContext {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** 16 lower-case hex digits. */
  spanId: string;
  /** Whether the trace is recorded (the `sampled` flag). */
  sampled: boolean;
}

export type SpanKind = 'server' | 'client' | 'producer' | 'consumer' | 'internal';

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  kind: SpanKind;
  /** Where the span belongs; without one it starts a trace. */
  parent?: SpanContext;
  links?: SpanContext[];
  attributes?: SpanAttributes;
  /** When it began, as `performance.now()` gave it, for a span made after the fact; without one it begins now. */
  startTime?: number;
}

export interface TraceSpan {
  readonly context: SpanContext;
  set(attributes: SpanAttributes): void;
  /**
   * Ends the span. With an error type (an error's kind, an HTTP status), its status is an error and
   * `error.type` names it; no message is kept, since an error's words may quote a body.
   */
  end(errorType?: string): void;
}

/**
 * Where the engine reports spans. An adapter exports them (OpenTelemetry, in bin/); the engine only
 * calls this, and only when `enabled`: without tracing, its hot paths build no span and no attribute.
 */
export interface Tracer {
  readonly enabled: boolean;
  start(name: string, options: SpanOptions): TraceSpan;
}

const NO_SPAN: TraceSpan = {
  context: { traceId: '0'.repeat(32), spanId: '0'.repeat(16), sampled: false },
  set() {},
  end() {},
};

/** Tracing off: the default. */
export const noTracer: Tracer = { enabled: false, start: () => NO_SPAN };

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * A `traceparent` header's context, or undefined when it is not a valid one (W3C Trace Context:
 * version ff, an all-zero id, or more fields on version 00 make it invalid; later versions may add fields).
 */
export function parseTraceparent(header: string | undefined): SpanContext | undefined {
  const match = header === undefined ? null : TRACEPARENT.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** W3C Trace Context's bounds: the members of a `tracestate` every vendor is asked to pass on, and their length. */
const TRACESTATE_MEMBERS = 32;
const TRACE_HEADER_LENGTH = 512;
const TRACESTATE_MEMBER =
  /^[a-z0-9][_0-9a-z*/@-]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * A sender's trace context as it may be kept: `traceparent` when it is valid, `tracestate` only beside it and
 * only when it is well formed and within W3C's bounds; anything else is dropped, never stored as it came.
 */
export function traceContextHeaders(traceparent: string | undefined, tracestate: string | undefined) {
  const kept: { traceparent?: string; tracestate?: string } = {};
  if (traceparent === undefined || traceparent.length > TRACE_HEADER_LENGTH || !parseTraceparent(traceparent))
    return kept;
  kept.traceparent = traceparent.trim();
  if (tracestate === undefined || tracestate.length > TRACE_HEADER_LENGTH) return kept;
  const members = tracestate
    .split(',')
    .map((member) => member.trim())
    .filter((member) => member !== '');
  if (members.length <= TRACESTATE_MEMBERS && members.every((member) => TRACESTATE_MEMBER.test(member)))
    kept.tracestate = members.join(',');
  return kept;
}

/** The `traceparent` header of a span's context. */
export const traceparentOf = (context: SpanContext) =>
  `00-${context.traceId}-${context.spanId}-${context.sampled ? '01' : '00'}`;

/** What a log line carries of the span it was written in. */
export const logFieldsOf = (context: SpanContext) => ({ trace_id: context.traceId, span_id: context.spanId });
