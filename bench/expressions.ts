/**
 * (e) What the expression sandbox costs: the benchmark's map expression evaluated in the process,
 * and the same expression evaluated in the sandbox, one at a time (latency) and 32 at once
 * (throughput, and this process's CPU per evaluation).
 */
import { Expression } from '../engine/expressions/expression.ts';
import { ExpressionSandbox } from '../engine/expressions/sandbox.ts';
import { MAP_EXPRESSION, sampleOrder } from './flows.ts';

const EVALUATIONS = Number(process.env.BENCH_EVALUATIONS ?? 5000);
const IN_FLIGHT = 32;

async function measure(evaluate: () => Promise<unknown>, inFlight: number) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let left = EVALUATIONS;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await evaluate();
    }),
  );
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    microsecondsPerEvaluation: Math.round((elapsedMs * 1000) / EVALUATIONS),
    evaluationsPerSecond: Math.round(EVALUATIONS / (elapsedMs / 1000)),
    callerCpuMicrosecondsPerEvaluation: Math.round((used.user + used.system) / EVALUATIONS),
  };
}

export async function measureExpressions(results: Record<string, unknown>) {
  const sandbox = new ExpressionSandbox({
    timeoutMs: 1000,
    memoryMb: 128,
    maxDepth: 300,
    maxResultBytes: 1 << 20,
    processes: 2,
  });
  const inline = new Expression(MAP_EXPRESSION, sandbox);
  const bindings = { input: { body: sampleOrder(1) } };
  const sandboxed = () => sandbox.evaluate(MAP_EXPRESSION, bindings);
  try {
    await sandboxed(); // the processes start outside the measurement
    await Promise.all([sandboxed(), sandboxed()]);
    results.expressions = {
      expression: MAP_EXPRESSION,
      evaluations: EVALUATIONS,
      inProcess: await measure(() => inline.evaluate(bindings), 1),
      sandboxOneAtATime: await measure(sandboxed, 1),
      sandbox32InFlight: await measure(sandboxed, IN_FLIGHT),
    };
  } finally {
    sandbox.close();
  }
}
