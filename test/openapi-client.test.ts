import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { OpenApiContract } from './support/openapi-contract.ts';

// A client generated from the served /openapi.json, as an integrator would make one, in a folder
// where `openapi-fetch` resolves (under node_modules, so nothing generated is in the tree).
const DIR = path.resolve(import.meta.dirname, '../node_modules/.cache/tributary-generated-client');

/** Creates, publishes and runs a flow with nothing but the generated types and openapi-fetch. */
const PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

async function main([baseUrl, clientId, clientSecret, hook]: string[]) {
const anonymous = createClient<paths>({ baseUrl });
const issued = await anonymous.POST('/oauth/token', {
  body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
});
const token: string = issued.data!.access_token;
const api = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\`, tenant_id: 'acme' } });
const created = await api.POST('/api/v1/editable-flows', {
  body: {
    key: 'typed',
    name: 'made by a generated client',
    trigger: { type: 'webhook' },
    nodes: [{ id: 'map', operation: 'transform', config: { expression: '{{ {"n": $input.body.n * 2} }}' } }],
    edges: [{ from: 'trigger', to: 'map' }],
  },
});
const id: string = created.data!.id;
const published = await api.POST('/api/v1/editable-flows/{id}/publish', { params: { path: { id } } });
const version: number = published.data!.version;
const delivered = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n": 21}' });
const { runId } = (await delivered.json()) as { runId: string };
const run = await api.GET('/api/v1/runs/{id}', { params: { path: { id: runId }, query: { wait: 20 } } });
const steps: Array<{ nodeId: string; output?: unknown }> = run.data!.steps;
console.log(JSON.stringify({ version, status: run.data!.status, steps: steps.map((s) => [s.nodeId, s.output]) }));
}
void main(process.argv.slice(2));
`;

let env: TestPlatform;
let acme: ApiClient;

beforeAll(async () => {
  env = await startTestPlatform('pglite');
  acme = await env.tenant('acme');
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
});
afterAll(async () => {
  await env?.close();
  rmSync(DIR, { recursive: true, force: true });
});

describe('/openapi.json', () => {
  it('generates a client (openapi-typescript, openapi-fetch) that type-checks and creates, publishes and runs a flow', async () => {
    const document = await (await fetch(`${env.url}/openapi.json`)).json();
    writeFileSync(path.join(DIR, 'api.ts'), astToString(await openapiTS(document)));
    writeFileSync(path.join(DIR, 'program.ts'), PROGRAM);
    const program = ts.createProgram([path.join(DIR, 'program.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: ['node'],
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    expect(problems).toEqual([]);

    const { client_id, client_secret } = acme.credentials;
    // Not execFileSync: the server answering the program runs in this process.
    const { stdout: printed } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(DIR, 'program.ts'),
        env.url,
        client_id,
        client_secret,
        `${env.url}/hooks/acme/typed`,
      ],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(printed)).toEqual({ version: 1, status: 'succeeded', steps: [['map', { n: 42 }]] });
  });
});

describe('request examples in /openapi.json', () => {
  it('every request body has an example, and each is valid under its own schema', async () => {
    const { bodies, violations } = (await OpenApiContract.of(env.url)).requestExamples();
    expect(bodies).toBeGreaterThanOrEqual(30);
    expect(violations).toEqual([]);
  });
});
