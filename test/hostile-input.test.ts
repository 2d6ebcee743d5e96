import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';

// Every route of /openapi.json, driven with the values a hostile or careless client sends: the
// answer is never a 5xx, a hang or a dead process. FUZZ_ROUNDS repeats the whole drive (default 1).

const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 1);

/** Raw path and query values (already percent-encoded). */
const RAW_VALUES = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%C0%80',
  '99999999999999999999',
  '1e308',
  '9007199254740993',
  '1.5',
  '-1',
  '0',
  'x'.repeat(4000),
  '%F0%9F%98%80',
  '..%2F..',
  '%25',
  'null',
  'true',
  '%20',
];

/** JSON texts for body fields. */
const JSON_VALUES = [
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"\\udc00x"',
  '1e308',
  '-1e308',
  '9007199254740993',
  '99999999999999999999',
  '1.5',
  '-1',
  '0',
  'null',
  '""',
  JSON.stringify('x'.repeat(100_000)),
  '{}',
  '[]',
  'true',
  '[null]',
  '{"\\u0000": 1}',
  `${'['.repeat(90)}${']'.repeat(90)}`,
];

/** Whole bodies. */
const BODIES = [
  'null',
  '[]',
  '"text"',
  '0',
  '{',
  '{"a":',
  '\\u0000',
  '{"__proto__": {"x": 1}}',
  '{"constructor": {"prototype": {"x": 1}}}',
];

interface Operation {
  method: string;
  path: string;
  operator: boolean;
  pathParams: string[];
  queryParams: string[];
  bodyProperties: string[];
  hasBody: boolean;
}

let env: TestPlatform;
let tenant: ApiClient;
let operator: ApiClient;
let operations: Operation[];
/** Path parameter values that name existing resources. */
let known: Record<string, string>;

beforeAll(async () => {
  env = await startTestPlatform('postgres');
  tenant = await env.tenant('fuzz');
  operator = await env.operator();
  // Real resources, so requests that name them reach the store with their hostile parts.
  const flowId = await tenant.publish({
    key: 'fuzz',
    name: 'fuzz',
    trigger: { type: 'webhook' },
    nodes: [{ id: 'n', operation: 'transform', config: { expression: '{{ 1 }}' } }],
    edges: [{ from: 'trigger', to: 'n' }],
  });
  expect((await tenant.call('PUT', '/api/v1/data-spaces/space1', {})).status).toBe(201);
  expect((await tenant.call('PUT', '/api/v1/data-spaces/space1/documents/doc1', { value: 1 })).status).toBe(201);
  known = { id: flowId, name: 'space1', key: 'doc1', tenantId: 'fuzz', version: '1', topic: 'topic1' };
  const document = await (await fetch(`${env.url}/openapi.json`)).json();
  const resolve = (schema: any): any => {
    const ref = schema?.$ref as string | undefined;
    return ref ? (document.components?.schemas?.[ref.split('/').pop()!] ?? {}) : (schema ?? {});
  };
  operations = [];
  for (const [path, methods] of Object.entries<any>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(methods)) {
      const parameters: any[] = operation.parameters ?? [];
      const body = resolve(operation.requestBody?.content?.['application/json']?.schema);
      operations.push({
        method: method.toUpperCase(),
        path,
        // Operator routes are the ones without the tenant_id header.
        operator: !parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'tenant_id'),
        pathParams: parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name),
        queryParams: parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name),
        bodyProperties: Object.keys(body.properties ?? {}),
        hasBody: operation.requestBody !== undefined,
      });
    }
  }
});
afterAll(async () => {
  await env?.close();
});

interface Answer {
  status: number;
  request: string;
}

/** One request, as the operation's kind of client (a tenant's, or the operator's when the tenant's is refused). */
async function send(operation: Operation, path: string, query: string, body: string | undefined): Promise<Answer> {
  const request = `${operation.method} ${path}${query}${body === undefined ? '' : ` ${body.slice(0, 80)}`}`;
  const attempt = async (client: ApiClient) => {
    const response = await fetch(`${env.url}${path}${query}`, {
      method: operation.method,
      headers: {
        authorization: `Bearer ${client.token}`,
        ...(client.tenantId ? { tenant_id: client.tenantId } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    await response.arrayBuffer();
    return response.status;
  };
  let status = await attempt(operation.operator ? operator : tenant);
  if (status === 403 && !operation.operator) status = await attempt(operator);
  return { status, request };
}

const fill = (path: string, values: Record<string, string>) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? known[name] ?? 'x1');

/** Every request the drive sends for one operation. */
function* requests(operation: Operation): Generator<[string, string, string | undefined]> {
  const base = fill(operation.path, {});
  const validBody = operation.hasBody ? '{}' : undefined;
  for (const name of operation.pathParams) {
    for (const value of RAW_VALUES) yield [fill(operation.path, { [name]: value }), '', validBody];
  }
  for (const name of operation.queryParams) {
    for (const value of RAW_VALUES) yield [base, `?${name}=${value}`, validBody];
  }
  if (!operation.hasBody) return;
  for (const body of BODIES) yield [base, '', body];
  for (const property of operation.bodyProperties) {
    for (const value of JSON_VALUES) yield [base, '', `{"${property}": ${value}}`];
  }
  // Nested places where documents keep strings and integers.
  for (const value of JSON_VALUES)
    yield [base, '', `{"value": {"nested": [${value}]}, "document": {"key": ${value}}, "revision": ${value}}`];
}

describe('hostile input on every route', () => {
  it('never answers 5xx, and the process stays up', async () => {
    const failures: Answer[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const operation of operations) {
        for (const [path, query, body] of requests(operation)) {
          const answer = await send(operation, path, query, body);
          sent++;
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status >= 500) failures.push(answer);
        }
      }
    }
    console.info(
      `hostile input: ${sent} requests over ${operations.length} operations; ` +
        `answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(sent).toBeGreaterThan(1000);
    expect(failures.slice(0, 30)).toEqual([]);
    expect((await fetch(`${env.url}/healthz`)).status).toBe(200);
  });

  it('the unauthenticated routes refuse NUL, lone surrogates and huge numbers with 4xx', async () => {
    const token = (body: string) =>
      fetch(`${env.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    for (const value of JSON_VALUES) {
      const answer = await token(
        `{"grant_type": "client_credentials", "client_id": ${value}, "client_secret": ${value}}`,
      );
      expect(answer.status, value).toBeGreaterThanOrEqual(400);
      expect(answer.status, value).toBeLessThan(500);
    }
    const hook = await fetch(`${env.url}/hooks/fuzz/none`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a": "\\ud800"}',
    });
    expect(hook.status).toBe(400);
    expect(hook.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('keeps a trace context only when it is valid and within W3C bounds', async () => {
    const headersOf = async (traceparent: string, tracestate: string) => {
      const accepted = await fetch(`${env.url}/hooks/fuzz/fuzz`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent, tracestate },
        body: '{}',
      });
      expect(accepted.status).toBe(202);
      const { messageId } = await accepted.json();
      return (await tenant.call('GET', `/api/v1/messages/${messageId}`)).body.headers;
    };
    const valid = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(await headersOf(valid, 'vendor=opaque, other@tenant=v1')).toMatchObject({
      traceparent: valid,
      tracestate: 'vendor=opaque,other@tenant=v1',
    });
    const hugeParent = await headersOf(`00-${'a'.repeat(8 * 1024)}`, 'k=v');
    expect(hugeParent).not.toHaveProperty('traceparent');
    expect(hugeParent).not.toHaveProperty('tracestate');
    const hugeState = await headersOf(valid, `k=${'v'.repeat(7 * 1024)}`);
    expect([hugeState.traceparent, hugeState.tracestate]).toEqual([valid, undefined]);
    const tooLongState = await headersOf(valid, Array.from({ length: 33 }, (_, n) => `k${n}=v`).join(','));
    expect([tooLongState.traceparent, tooLongState.tracestate]).toEqual([valid, undefined]);
  });
});
