import http from 'node:http';
import { type ClientAuthenticator, isOperatorAuthorization, type TokenVerifier } from '../api/auth/index.ts';
import { HttpProblem } from '../api/http/index.ts';
import type { Config } from './config/config.ts';
import type { PrometheusMetrics } from './metrics.ts';

/** `GET /metrics` alone, for operators (Basic with an operator client, or an operator token). */
export async function serveMetrics(
  metrics: PrometheusMetrics,
  clients: ClientAuthenticator,
  verifier: TokenVerifier,
  config: Config,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const answer = async () => {
      if (req.method !== 'GET' || req.url !== '/metrics') return void res.writeHead(404).end();
      const address = req.socket.remoteAddress ?? '';
      if (!(await isOperatorAuthorization(clients, verifier, req.headers.authorization, address))) {
        return void res
          .writeHead(401, { 'WWW-Authenticate': 'Basic realm="Tributary operators", charset="UTF-8"' })
          .end();
      }
      res.writeHead(200, { 'content-type': metrics.contentType }).end(await metrics.render());
    };
    answer().catch((error: unknown) =>
      error instanceof HttpProblem ? res.writeHead(error.status, error.extra.headers).end() : res.writeHead(503).end(),
    );
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(config.metricsPort, config.host, resolve),
  );
  return server;
}
