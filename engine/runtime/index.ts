export * from './executor.ts';
export * from './flow-cache.ts';
export * from './redact.ts';
export * from './run-log.ts';
export * from './run-sink.ts';
export * from './test-run.ts';
