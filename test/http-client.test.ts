import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperationError } from '../engine/model/errors.ts';
import { bodyValue, HttpClient, type OutboundRequest } from '../engine/outbound/http-client.ts';
import { nonPublicAddress } from '../engine/outbound/network.ts';

/** A server with one route per behaviour; records what it received. */
function startServer(
  routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void>,
) {
  const received: Array<{
    path: string;
    method: string;
    headers: http.IncomingHttpHeaders;
    body: string;
    remotePort: number;
  }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      received.push({
        path,
        method: req.method ?? '',
        headers: req.headers,
        body,
        remotePort: req.socket.remotePort ?? 0,
      });
      const route = routes[path];
      if (route) route(req, res, body);
      else res.writeHead(404).end();
    });
  });
  return new Promise<{ url: string; received: typeof received; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        close: () => server.close(),
      }),
    ),
  );
}

const json = (res: http.ServerResponse, value: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));

async function failure(request: Promise<unknown>): Promise<OperationError> {
  const error = await request.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(OperationError);
  return error as OperationError;
}

describe('outbound HTTP client', () => {
  const client = new HttpClient();

  let main: Awaited<ReturnType<typeof startServer>>;
  let other: Awaited<ReturnType<typeof startServer>>;
  const request = (path: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({
    method: 'GET',
    url: new URL(path, main.url),
    headers: {},
    timeoutMs: 5000,
    maxResponseBytes: 10_000,
    failure: `call ${path} failed`,
    ...extra,
  });

  beforeAll(async () => {
    other = await startServer({
      '/elsewhere': (req, res) => json(res, { authorization: req.headers.authorization ?? null }),
    });
    main = await startServer({
      '/echo': (req, res, body) =>
        json(res, { method: req.method, body, contentType: req.headers['content-type'] ?? null }),
      '/gzip': (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
          .end(zlib.gzipSync(JSON.stringify({ packed: true }))),
      '/br': (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'br' })
          .end(zlib.brotliCompressSync('brotli text')),
      '/bomb': (_req, res) =>
        res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(Buffer.alloc(1_000_000))),
      '/big-declared': (_req, res) => res.writeHead(200, { 'content-length': '50000' }).end(Buffer.alloc(50_000)),
      '/big-chunked': (_req, res) => {
        res.writeHead(200);
        for (let i = 0; i < 50; i++) res.write(Buffer.alloc(1000));
        res.end();
      },
      '/found': (_req, res) => res.writeHead(302, { location: '/echo' }).end(),
      '/see-other': (_req, res) => res.writeHead(303, { location: '/echo' }).end(),
      '/temporary': (_req, res) => res.writeHead(307, { location: '/echo' }).end(),
      '/away': (_req, res) => res.writeHead(302, { location: `${other.url}/elsewhere` }).end(),
      '/loop': (_req, res) => res.writeHead(302, { location: '/loop' }).end(),
      '/to-other-loopback': (req, res) =>
        res.writeHead(302, { location: `http://127.0.0.2:${req.socket.localPort}/echo` }).end(),
      '/hang': () => {},
      '/cookies': (_req, res) => res.writeHead(200, { 'set-cookie': ['a=1', 'b=2'] }).end('ok'),
    });
  });
  afterAll(() => {
    main.close();
    other.close();
  });

  it('keeps connections alive: consecutive requests share a socket', async () => {
    const first = await client.send(request('/echo'));
    const second = await client.send(request('/echo'));
    expect([first.status, second.status]).toEqual([200, 200]);
    const ports = main.received
      .filter((entry) => entry.path === '/echo')
      .slice(-2)
      .map((entry) => entry.remotePort);
    expect(ports[0]).toBe(ports[1]);
  });

  it("never hands one tenant's kept-alive socket to another tenant", async () => {
    const echoPorts = () => main.received.filter((entry) => entry.path === '/echo').map((entry) => entry.remotePort);
    const acme = client.forTenant('acme');
    const globex = client.forTenant('globex');
    await acme.send(request('/echo'));
    await globex.send(request('/echo'));
    await acme.send(request('/echo'));
    await globex.send(request('/echo'));
    const [acmeFirst, globexFirst, acmeSecond, globexSecond] = echoPorts().slice(-4);
    expect(acmeSecond).toBe(acmeFirst);
    expect(globexSecond).toBe(globexFirst);
    expect(globexFirst).not.toBe(acmeFirst);
  });

  it('decodes gzip and brotli bodies, and refuses one that is over the limit once decoded', async () => {
    expect(bodyValue(await client.send(request('/gzip')))).toEqual({ packed: true });
    expect(bodyValue(await client.send(request('/br')))).toBe('brotli text');
    const bomb = await failure(client.send(request('/bomb')));
    expect(bomb).toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining('exceeds maxResponseBytes (10000) once decoded'),
    });
  });

  it('refuses a response over maxResponseBytes, declared or streamed', async () => {
    expect(await failure(client.send(request('/big-declared')))).toMatchObject({
      kind: 'permanent',
      message: 'response of 50000 bytes exceeds maxResponseBytes (10000)',
    });
    expect(await failure(client.send(request('/big-chunked')))).toMatchObject({
      kind: 'permanent',
      message: 'response exceeds maxResponseBytes (10000)',
    });
  });

  it('follows redirects as fetch does: 302 and 303 after a POST become GETs, 307 resends the body', async () => {
    const post = { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } };
    expect(bodyValue(await client.send(request('/found', post)))).toEqual({
      method: 'GET',
      body: '',
      contentType: null,
    });
    expect(bodyValue(await client.send(request('/see-other', post)))).toEqual({
      method: 'GET',
      body: '',
      contentType: null,
    });
    expect(bodyValue(await client.send(request('/temporary', post)))).toEqual({
      method: 'POST',
      body: '{"a":1}',
      contentType: 'application/json',
    });
    const loop = await failure(client.send(request('/loop')));
    expect(loop).toMatchObject({ kind: 'permanent', message: 'call /loop failed: more than 5 redirects' });
  });

  it('drops credentials when a redirect leaves the origin', async () => {
    const answer = await client.send(request('/away', { headers: { authorization: 'Bearer s3cret' } }));
    expect(bodyValue(answer)).toEqual({ authorization: null });
  });

  it('fails retryably when the peer does not answer in time, is aborted, or refuses the connection', async () => {
    const slow = await failure(client.send(request('/hang', { timeoutMs: 200 })));
    expect(slow).toMatchObject({
      kind: 'retryable',
      message: 'call /hang failed: no answer within 200 ms',
      details: { url: `${main.url}/hang` },
    });
    const controller = new AbortController();
    const aborted = client.send(request('/hang', { signal: controller.signal }));
    controller.abort(new Error('worker shutting down'));
    expect(await failure(aborted)).toMatchObject({
      kind: 'retryable',
      message: 'call /hang failed: worker shutting down',
    });
    const refused = await failure(client.send({ ...request('/echo'), url: new URL('http://127.0.0.1:9/echo') }));
    expect(refused).toMatchObject({ kind: 'retryable', message: expect.stringContaining('ECONNREFUSED') });
  });

  it('refuses a header that is not valid HTTP permanently, and joins repeated response headers', async () => {
    const bad = await failure(client.send(request('/echo', { headers: { 'x-note': 'line\nbreak' } })));
    expect(bad.kind).toBe('permanent');
    expect((await client.send(request('/cookies'))).headers['set-cookie']).toBe('a=1, b=2');
  });

  it('checks every address it would connect to: literals, names once resolved, and redirect targets', async () => {
    // Refuses one loopback address only, so that the test servers on 127.0.0.1 stay reachable.
    const refusing = new HttpClient({
      refusedAddress: (address) => (address === '127.0.0.2' ? 'a refused address' : undefined),
    });
    const byName = { ...request('/echo'), url: new URL(`http://localhost:${new URL(main.url).port}/echo`) };
    expect((await refusing.send(byName)).status).toBe(200);
    const literal = await failure(refusing.send({ ...request('/echo'), url: new URL('http://127.0.0.2:9/echo') }));
    expect(literal).toMatchObject({
      kind: 'permanent',
      message:
        'call /echo failed: 127.0.0.2 is a refused address, and requests to non-public addresses are refused ' +
        'here (OUTBOUND_PRIVATE_ADDRESSES)',
    });
    const redirected = await failure(refusing.send(request('/to-other-loopback')));
    expect(redirected).toMatchObject({ kind: 'permanent', message: expect.stringContaining('127.0.0.2 is a refused') });
    const resolved = await failure(new HttpClient({ refusedAddress: nonPublicAddress }).send(byName));
    expect(resolved).toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining('localhost is refused by the address policy'),
    });
    // What the name resolves to inside the deployment is not told.
    expect(JSON.stringify(resolved)).not.toMatch(/127\.0\.0\.1|::1|loopback/);
  });
});
