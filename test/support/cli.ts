import { spawn } from 'node:child_process';
import type { ApiClient } from './harness.ts';

/**
 * `tributary <args> --tenant <its tenant> --url <its server>` as a person or a CI job runs it, with `client`'s
 * credentials: its exit code and what it printed.
 */
export function tributary(client: ApiClient, ...args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    ['bin/tributary.js', ...args, '--tenant', client.tenantId, '--url', client.url],
    {
      env: {
        ...process.env,
        TRIBUTARY_CLIENT_ID: client.credentials.client_id,
        TRIBUTARY_CLIENT_SECRET: client.credentials.client_secret,
      },
    },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}
