import http from 'node:http';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A local HTTP endpoint standing in for an outside system: records every request and answers
 * from a script of replies (then 200 with the parsed request body).
 */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly replies: Reply[] = [];
  private readonly hanging = new Set<http.ServerResponse>();
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        this.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const reply = this.replies.shift() ?? { status: 200, body: { received: body ? JSON.parse(body) : null } };
        if (reply === 'hang') {
          this.hanging.add(res);
          return;
        }
        const send = () => res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.body ?? {}));
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  /** The next requests get these replies, in order. */
  script(...replies: Reply[]) {
    this.replies.push(...replies);
    return this;
  }

  async close() {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
