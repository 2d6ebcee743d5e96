import http from 'node:http';
import { gunzipSync } from 'node:zlib';

/** A span as an OTLP receiver got it, whichever the encoding: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** Nanoseconds since the Unix epoch. */
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  resource: Record<string, unknown>;
  /** How it came: `http/protobuf` or `http/json`. */
  protocol: string;
}

/**
 * A local OTLP/HTTP traces endpoint (`POST /v1/traces`), as a collector's receiver is: it takes
 * `application/x-protobuf` and `application/json` (gzip or not), decodes each request itself (the
 * protobuf wire format by the field numbers of opentelemetry-proto's trace.proto, never with the
 * exporter's own code) and keeps the spans.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const type = req.headers['content-type'] ?? '';
        if (type.startsWith('application/x-protobuf')) {
          this.spans.push(...decodeProtobufRequest(body));
          return void res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        }
        if (type.startsWith('application/json')) {
          this.spans.push(...decodeJsonRequest(JSON.parse(body.toString('utf8'))));
          return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        }
        res.writeHead(415).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

// --- OTLP/JSON: ids are hex strings, enums numbers, 64-bit integers may be strings. ---

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonAnyValue[] };
}

type JsonKeyValue = { key: string; value?: JsonAnyValue };

const jsonValue = (value: JsonAnyValue | undefined): unknown =>
  value === undefined
    ? undefined
    : (value.stringValue ??
      value.boolValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      value.arrayValue?.values?.map(jsonValue));

const jsonAttributes = (list: JsonKeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, jsonValue(value)]));

function decodeJsonRequest(request: any): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? [])
      for (const span of scopeSpans.spans ?? [])
        spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: jsonAttributes(span.attributes),
          links: (span.links ?? []).map((link: { traceId: string; spanId: string }) => ({
            traceId: link.traceId,
            spanId: link.spanId,
          })),
          statusCode: span.status?.code ?? 0,
          startTimeUnixNano: BigInt(span.startTimeUnixNano ?? 0),
          endTimeUnixNano: BigInt(span.endTimeUnixNano ?? 0),
          resource,
          protocol: 'http/json',
        });
  }
  return spans;
}

// --- OTLP/protobuf: the wire format, read field by field. ---

type Field = { number: number; wire: number; value: bigint | Buffer };

/** The fields of one protobuf message, in order (varints as bigint, length-delimited as bytes). */
function fields(buffer: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buffer[at++];
      if (byte === undefined) throw new Error('truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ number, wire, value: varint() });
    else if (wire === 1) {
      out.push({ number, wire, value: buffer.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ number, wire, value: buffer.subarray(at, at + length) });
      at += length;
    } else if (wire === 5) {
      out.push({ number, wire, value: buffer.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

const all = (list: Field[], number: number) => list.filter((field) => field.number === number);
const bytes = (list: Field[], number: number) => all(list, number)[0]?.value as Buffer | undefined;
const text = (list: Field[], number: number) => bytes(list, number)?.toString('utf8') ?? '';
const hex = (list: Field[], number: number) => bytes(list, number)?.toString('hex') ?? '';
const fixed64 = (list: Field[], number: number) => bytes(list, number)?.readBigUInt64LE(0) ?? 0n;
const integer = (list: Field[], number: number) => Number((all(list, number)[0]?.value as bigint | undefined) ?? 0n);

/** common.proto AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array. */
function anyValue(list: Field[]): unknown {
  const [field] = list;
  if (!field) return undefined;
  switch (field.number) {
    case 1:
      return (field.value as Buffer).toString('utf8');
    case 2:
      return field.value === 1n;
    case 3:
      return Number(BigInt.asIntN(64, field.value as bigint));
    case 4:
      return (field.value as Buffer).readDoubleLE(0);
    case 5:
      return all(fields(field.value as Buffer), 1).map((value) => anyValue(fields(value.value as Buffer)));
    default:
      return undefined;
  }
}

/** repeated KeyValue (1 key, 2 value). */
const protobufAttributes = (list: Field[]) =>
  Object.fromEntries(
    list.map((field) => {
      const keyValue = fields(field.value as Buffer);
      return [text(keyValue, 1), anyValue(fields(bytes(keyValue, 2) ?? Buffer.alloc(0)))];
    }),
  );

/**
 * ExportTraceServiceRequest (1 resource_spans) > ResourceSpans (1 resource, 2 scope_spans) > ScopeSpans
 * (2 spans) > Span (1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 7 start_time_unix_nano,
 * 8 end_time_unix_nano, 9 attributes, 13 links, 15 status).
 */
function decodeProtobufRequest(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of all(fields(body), 1)) {
    const resourceFields = fields(resourceSpans.value as Buffer);
    const resource = protobufAttributes(all(fields(bytes(resourceFields, 1) ?? Buffer.alloc(0)), 1));
    for (const scopeSpans of all(resourceFields, 2))
      for (const spanField of all(fields(scopeSpans.value as Buffer), 2)) {
        const span = fields(spanField.value as Buffer);
        spans.push({
          traceId: hex(span, 1),
          spanId: hex(span, 2),
          parentSpanId: hex(span, 4),
          name: text(span, 5),
          kind: integer(span, 6),
          attributes: protobufAttributes(all(span, 9)),
          links: all(span, 13).map((link) => {
            const linkFields = fields(link.value as Buffer);
            return { traceId: hex(linkFields, 1), spanId: hex(linkFields, 2) };
          }),
          statusCode: integer(fields(bytes(span, 15) ?? Buffer.alloc(0)), 3),
          startTimeUnixNano: fixed64(span, 7),
          endTimeUnixNano: fixed64(span, 8),
          resource,
          protocol: 'http/protobuf',
        });
      }
  }
  return spans;
}
