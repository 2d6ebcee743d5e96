import { randomUUID } from 'node:crypto';
import type { Tracer as OtelTracer, Link } from '@opentelemetry/api';
import type { SpanContext, SpanKind, SpanOptions, Tracer, TraceSpan } from '../engine/telemetry/index.ts';

/** The environment tracing is configured from: the standard OpenTelemetry variables. */
export type TracingEnv = Readonly<Record<string, string | undefined>>;

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;
type Protocol = (typeof PROTOCOLS)[number];

/** What the OTEL_* variables ask for, checked; undefined when they ask for no traces. */
export interface TracingSettings {
  url: string;
  protocol: Protocol;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: { name: string; ratio: number };
  /** How long spans wait to be sent together (OTEL_BSP_SCHEDULE_DELAY). */
  scheduleDelayMs: number;
}

/** A setting that cannot be used: the process does not start. */
export class TracingConfigError extends Error {}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/**
 * Traces are exported when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT) or
 * OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export function tracingSettings(env: TracingEnv): TracingSettings | undefined {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || exporter === 'none') return undefined;
  if (exporter && exporter !== 'otlp')
    throw new TracingConfigError(`OTEL_TRACES_EXPORTER=${exporter} is not supported: otlp or none`);
  if (!exporter && !tracesEndpoint && !endpoint) return undefined;
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  if (!PROTOCOLS.includes(protocol as Protocol))
    throw new TracingConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: ${PROTOCOLS.join(' or ')}`);
  // The signal's own endpoint is used as it is; the general one gets the signal's path (OTLP exporter spec).
  const url = tracesEndpoint || `${(endpoint || 'http://localhost:4318').replace(/\/?$/, '/')}v1/traces`;
  try {
    new URL(url);
  } catch {
    throw new TracingConfigError(`the OTLP traces endpoint ${url} is not a URL`);
  }
  const samplerName = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.includes(samplerName))
    throw new TracingConfigError(`OTEL_TRACES_SAMPLER=${samplerName} is not supported: ${SAMPLERS.join(', ')}`);
  const ratio = env.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (samplerName.endsWith('traceidratio') && !(ratio >= 0 && ratio <= 1))
    throw new TracingConfigError('OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1');
  const delay = env.OTEL_BSP_SCHEDULE_DELAY === undefined ? 5000 : Number(env.OTEL_BSP_SCHEDULE_DELAY);
  if (!Number.isInteger(delay) || delay < 0)
    throw new TracingConfigError('OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds');
  const resourceAttributes = keyValues(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  return {
    url,
    protocol: protocol as Protocol,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || 'tributary',
    resourceAttributes,
    sampler: { name: samplerName, ratio },
    scheduleDelayMs: delay,
  };
}

/** `key=value,key2=value2`, percent-decoded (W3C Baggage form, as OTEL_RESOURCE_ATTRIBUTES is written). */
function keyValues(text: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      pairs[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new TracingConfigError(`OTEL_RESOURCE_ATTRIBUTES has a pair that is not percent-encoded: ${pair}`);
    }
  }
  return pairs;
}

/** A running exporter of the engine's spans. */
export interface Tracing {
  tracer: Tracer;
  /** Sends what is left and stops. */
  shutdown(): Promise<void>;
}

/**
 * The OpenTelemetry SDK behind the engine's Tracer, loaded only here: a process without tracing never
 * loads it. Spans go out in batches over OTLP/HTTP; headers, timeout and compression of the exporter come
 * from the process's OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself.
 */
export async function startTracing(
  settings: TracingSettings,
  process: { role: string; version: string },
): Promise<Tracing> {
  const [api, sdk, resources, exporters] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    settings.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const ratio = new sdk.TraceIdRatioBasedSampler(settings.sampler.ratio);
  const root = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio }),
  }[settings.sampler.name];
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      ...settings.resourceAttributes,
      'service.name': settings.serviceName,
      'service.version': process.version,
      'service.instance.id': randomUUID(),
      'tributary.role': process.role,
    }),
    sampler: root,
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new exporters.OTLPTraceExporter({ url: settings.url }),
        scheduledDelayMillis: settings.scheduleDelayMs,
      }),
    ],
  });
  const tracer = new OtelSpans(provider.getTracer('tributary', process.version), api);
  return { tracer, shutdown: () => provider.shutdown() };
}

type Api = typeof import('@opentelemetry/api');

/**
 * A time of the process's monotonic clock as milliseconds since the epoch. Every span's start and end are on it:
 * a span begun after the fact (a node's, made when it failed) then lies inside its parent. The SDK's own times
 * start from Date.now(), to the millisecond, each span on its own.
 */
const epochMs = (monotonic: number) => performance.timeOrigin + monotonic;

/** The engine's Tracer on an OpenTelemetry tracer: contexts are passed explicitly, never through globals. */
class OtelSpans implements Tracer {
  readonly enabled = true;
  private readonly kinds: Record<SpanKind, number>;

  constructor(
    private readonly tracer: OtelTracer,
    private readonly api: Api,
  ) {
    const { SpanKind: Kind } = api;
    this.kinds = {
      server: Kind.SERVER,
      client: Kind.CLIENT,
      producer: Kind.PRODUCER,
      consumer: Kind.CONSUMER,
      internal: Kind.INTERNAL,
    };
  }

  start(name: string, { kind, parent, links, attributes, startTime }: SpanOptions): TraceSpan {
    const { api } = this;
    const context = parent ? api.trace.setSpanContext(api.ROOT_CONTEXT, this.otelContext(parent)) : api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      name,
      {
        kind: this.kinds[kind],
        attributes,
        links: links?.map((link): Link => ({ context: this.otelContext(link) })),
        startTime: epochMs(startTime ?? performance.now()),
      },
      context,
    );
    const { traceId, spanId, traceFlags } = span.spanContext();
    return {
      context: { traceId, spanId, sampled: (traceFlags & api.TraceFlags.SAMPLED) !== 0 },
      set: (more) => span.setAttributes(more),
      end: (errorType) => {
        if (errorType !== undefined) {
          span.setAttribute('error.type', errorType);
          span.setStatus({ code: api.SpanStatusCode.ERROR });
        }
        span.end(epochMs(performance.now()));
      },
    };
  }

  private otelContext({ traceId, spanId, sampled }: SpanContext) {
    return {
      traceId,
      spanId,
      traceFlags: sampled ? this.api.TraceFlags.SAMPLED : this.api.TraceFlags.NONE,
      isRemote: true,
    };
  }
}
