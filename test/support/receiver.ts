import http from 'node:http';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  answeredAt?: number;
  /** What it was answered (unset while it hangs). */
  reply?: { status: number; body?: unknown };
  /** Turned away by the receiver's guard before any scripted reply. */
  refused?: boolean;
}

export type Reply = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A local HTTP endpoint standing in for an outside system: records every request and answers
 * from a script of replies (then 200 with the parsed request body).
 */
export class Receiver {
  /** A guard answers a request itself (e.g. a failed signature check) by returning a reply. */
  constructor(private readonly guard?: (request: ReceivedRequest) => Reply | undefined) {}

  readonly requests: ReceivedRequest[] = [];
  private readonly replies: Reply[] = [];
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly slowPaths = new Map<string, number>();
  private server?: http.Server;
  url = '';

  /** Listens on `host` (another address than loopback: hosts in network namespaces reach it there). */
  async start(host = '127.0.0.1'): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const request: ReceivedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body,
          receivedAt: Date.now(),
        };
        this.requests.push(request);
        res.once('finish', () => (request.answeredAt = Date.now()));
        const refusal = this.guard?.(request);
        request.refused = refusal !== undefined;
        const reply = refusal ?? this.replies.shift() ?? this.defaultReply(request);
        if (reply === 'hang') {
          this.hanging.add(res);
          return;
        }
        request.reply = { status: reply.status, body: reply.body };
        const send = () =>
          res
            .writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
            .end(JSON.stringify(reply.body ?? {}));
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, host, resolve));
    this.url = `http://${host}:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  protected defaultReply(request: ReceivedRequest): Reply {
    return {
      status: 200,
      body: { received: request.body ? JSON.parse(request.body) : null },
      delayMs: this.slowPaths.get(request.url),
    };
  }

  /** Requests to `path` are answered after `delayMs` (unless a scripted reply says otherwise). */
  slow(path: string, delayMs: number) {
    this.slowPaths.set(path, delayMs);
    return this;
  }

  /** The most requests to `path` that were open at the same moment. */
  maxConcurrent(path: string): number {
    const events = this.requests
      .filter((request) => request.url === path)
      .flatMap(
        (request) =>
          [
            [request.receivedAt, 1],
            [request.answeredAt ?? Infinity, -1],
          ] as const,
      )
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let most = 0;
    for (const [, change] of events) most = Math.max(most, (open += change));
    return most;
  }

  /** The next requests get these replies, in order. */
  script(...replies: Reply[]) {
    this.replies.push(...replies);
    return this;
  }

  /** Drops the requests held by 'hang' replies and the replies still scripted: a server that recovered. */
  release() {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    this.replies.length = 0;
  }

  async close() {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
