import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Fixture } from '../engine/model/index.ts';
import type { FixtureResult } from '../engine/services/index.ts';
import { FLOW_FILE_SUFFIX } from '../engine/services/index.ts';
import { problemsOf, tenantApi, type TenantApiOptions } from './tenant-api.ts';

/** A recorded test's file: `<flow key>.<end of the run id>.test.json`. */
export const TEST_FILE_SUFFIX = '.test.json';

type Options = TenantApiOptions & { dir: string; print: (line: string) => void };

/** JSON as the files hold it: two spaces, a newline at the end. */
const formatted = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** `tributary test capture <run id>`: the run recorded as a test in `dir`. */
export async function captureTest(options: Options & { runId: string }): Promise<0> {
  const api = await tenantApi(options);
  const fixture = (await api('POST', `/api/v1/runs/${encodeURIComponent(options.runId)}/fixture`)) as Fixture;
  await mkdir(options.dir, { recursive: true });
  const name = `${fixture.flow}.${options.runId.slice(-12)}${TEST_FILE_SUFFIX}`;
  await writeFile(path.join(options.dir, name), formatted(fixture));
  const requests = fixture.exchanges.length;
  options.print(`recorded ${name}: ${requests} request${requests === 1 ? '' : 's'}, run ${fixture.expect.status}`);
  return 0;
}

/**
 * `tributary test`: every `*.test.json` of `dir` run against its flow's file (`<key>.flow.json` in `flows`, else in
 * `dir`) or, without one, the flow's draft; outbound requests answered from the recording. A line per test, what
 * differs under a failed one, and a summary; exit code 1 when any failed.
 */
export async function runTests(options: Options & { flows?: string }): Promise<0 | 1> {
  const api = await tenantApi(options);
  const names = (await readdir(options.dir)).filter((name) => name.endsWith(TEST_FILE_SUFFIX)).sort();
  let failed = 0;
  for (const name of names) {
    const problems = await runTest(api, options, name);
    options.print(`${problems.length === 0 ? 'PASS' : 'FAIL'}  ${name}`);
    for (const line of problems) options.print(`      ${line}`);
    if (problems.length > 0) failed++;
  }
  options.print(`tests: ${names.length - failed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

/** What is wrong with one test's run: nothing when it passed. */
async function runTest(
  api: Awaited<ReturnType<typeof tenantApi>>,
  options: Options & { flows?: string },
  name: string,
) {
  let fixture: Fixture;
  try {
    fixture = JSON.parse(await readFile(path.join(options.dir, name), 'utf8'));
  } catch (error) {
    return [`not JSON: ${(error as Error).message}`];
  }
  const file = path.join(options.flows ?? options.dir, `${fixture.flow}${FLOW_FILE_SUFFIX}`);
  let document: unknown;
  try {
    document = existsSync(file) ? JSON.parse(await readFile(file, 'utf8')) : undefined;
  } catch (error) {
    return [`${path.basename(file)}: not JSON: ${(error as Error).message}`];
  }
  const answer = await api('POST', '/api/v1/fixtures/run', { fixture, ...(document ? { document } : {}) });
  const problems = problemsOf(answer);
  if (problems) return problems.map(({ path: at, message }) => `${at}: ${message}`);
  const { differences } = answer as unknown as FixtureResult;
  return differences.flatMap(({ step, message, diff }) => [
    `${step ?? 'run'}: ${message}`,
    ...(diff ?? []).map((line) => `    ${line}`),
  ]);
}
