/** Running a run: the executor, the compiled-flow cache, test runs. */
export { Executor } from './executor.ts';
export { CompiledFlowCache } from './flow-cache.ts';
export type { PassOutcome } from './pass-outcome.ts';
export { type TestRequest, type TestResult, TestRunner } from './test-run.ts';
