import { compileFlow, type CompileOptions } from '../flow/index.ts';
import {
  ConflictError,
  type Fixture,
  jsonDiff,
  newId,
  NotFoundError,
  rerooted,
  underPath,
  ValidationError,
} from '../model/index.ts';
import { keptHeaders, RecordedAnswers } from '../outbound/index.ts';
import type { TestResult, TestRunner } from '../runtime/index.ts';
import { isTerminal, type Step, type Store } from '../store/index.ts';

/** A message's body is read whole for a test (it is at most BODY_LIMIT). */
const WHOLE_BODY = 2 ** 31 - 1;

/** How a recorded test's run differs from its recording, per step (none: the run as a whole). */
export interface FixtureDifference {
  step: string | null;
  message: string;
  /** For an output that differs: one line per field, `~` changed, `+` added, `-` removed. */
  diff?: string[];
}

export interface FixtureResult {
  passed: boolean;
  status: TestResult['status'];
  differences: FixtureDifference[];
  steps: Step[];
}

/**
 * Tests recorded from runs (decision 29): a run's message, its requests and answers and its steps, taken as a test;
 * and a test run against a flow's draft (or a document given) with the recording answering every request, nothing
 * sent and nothing stored, compared step by step with what was recorded.
 */
export class FixtureService {
  constructor(
    private readonly store: Store,
    private readonly compile: CompileOptions,
    private readonly runner: TestRunner,
  ) {}

  async capture(tenantId: string, runId: string): Promise<Fixture> {
    const found = await this.store.getRun(tenantId, runId);
    if (!found) throw new NotFoundError(`no run ${runId}`);
    const { run, steps } = found;
    if (!isTerminal(run.status))
      throw new ConflictError(`run ${runId} is ${run.status}: a test is recorded from a run that has ended`);
    const [flow, message] = await Promise.all([
      this.store.getFlow(tenantId, run.flowId),
      this.store.getMessage(tenantId, run.messageId, WHOLE_BODY),
    ]);
    if (!flow || !message) throw new NotFoundError(`run ${runId}'s flow or message is gone`);
    const { body, headers, query } = message.message;
    return {
      flow: flow.key,
      recordedFrom: { runId: run.id, flowVersion: run.flowVersion, recordedAt: new Date().toISOString() },
      message: { body, headers: keptHeaders(headers), query },
      exchanges: steps.flatMap((step) => (step.exchanges ?? []).map((exchange) => ({ step: step.key, ...exchange }))),
      expect: {
        status: run.status,
        steps: Object.fromEntries(
          steps.map((step) => [
            step.key,
            step.error
              ? { status: step.status, error: step.error.message }
              : { status: step.status, output: step.output },
          ]),
        ),
      },
      volatile: {},
    };
  }

  /** The test run against `document`, else the draft of the flow with its key. */
  async run(tenantId: string, fixture: Fixture, document?: unknown): Promise<FixtureResult> {
    const flow = await this.store.findFlowByKey(tenantId, fixture.flow);
    if (!flow && document === undefined)
      throw new NotFoundError(`no flow ${fixture.flow}: send its document with the test`, [
        { path: '$.fixture.flow', message: 'names no flow' },
      ]);
    let compiled: ReturnType<typeof compileFlow>;
    try {
      compiled = compileFlow(document ?? flow!.draft, this.compile);
    } catch (error) {
      if (document !== undefined) throw rerooted(error, '$.document');
      // The request is sound; the stored draft is not.
      const errors = error instanceof ValidationError ? underPath(error.errors, '$.draft') : undefined;
      throw new ConflictError(`the draft of ${fixture.flow} is not valid: fix it, or send a document`, errors);
    }
    const answers = new RecordedAnswers(fixture.exchanges);
    const result = await this.runner.run(tenantId, flow?.id ?? newId(), compiled, {
      input: fixture.message as { body?: unknown; headers?: Record<string, string>; query?: Record<string, unknown> },
      dryRun: false,
      transport: answers.transport,
    });
    const differences = [
      ...stepDifferences(fixture, result.steps),
      // A recorded request sent now with another body is named at its step already.
      ...answers.unsent
        .filter((line) => !answers.unrecorded.includes(line))
        .map((line) => ({ step: null, message: `${line}: recorded, and not sent now` })),
    ];
    if (result.status !== fixture.expect.status)
      differences.push({ step: null, message: `the run ${fixture.expect.status} when recorded, ${result.status} now` });
    return { passed: differences.length === 0, status: result.status, differences, steps: result.steps };
  }
}

/** Each recorded step against the step of the same key now; steps that ran only now. */
function stepDifferences(fixture: Fixture, steps: Step[]): FixtureDifference[] {
  const now = new Map(steps.map((step) => [step.key, step]));
  const differences: FixtureDifference[] = [];
  for (const [key, expected] of Object.entries(fixture.expect.steps)) {
    const step = now.get(key);
    if (!step) {
      differences.push({ step: key, message: `${expected.status} when recorded, did not run now` });
    } else if (step.status !== expected.status) {
      const why = step.error ? `: ${step.error.message}` : '';
      differences.push({ step: key, message: `${expected.status} when recorded, ${step.status} now${why}` });
    } else if (expected.error !== undefined && step.error?.message !== expected.error) {
      differences.push({
        step: key,
        message: 'its error differs',
        diff: jsonDiff(expected.error, step.error?.message ?? null, '$.error'),
      });
    } else if ('output' in expected) {
      const volatile = fixture.volatile?.[key] ?? [];
      const diff = jsonDiff(expected.output, step.output).filter((line) => !isVolatile(line, volatile));
      if (diff.length > 0) differences.push({ step: key, message: 'its output differs', diff });
    }
  }
  for (const step of steps)
    if (!(step.key in fixture.expect.steps))
      differences.push({ step: step.key, message: `did not run when recorded, ${step.status} now` });
  return differences;
}

/** Whether a diff line (`~ $.body.at: ...`) is about a path marked volatile, or a field inside one. */
function isVolatile(line: string, paths: string[]): boolean {
  const path = line.slice(2, line.indexOf(': '));
  return paths.some(
    (volatile) => path === volatile || path.startsWith(`${volatile}.`) || path.startsWith(`${volatile}[`),
  );
}
