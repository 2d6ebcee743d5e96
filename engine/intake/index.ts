export * from './intake.ts';
export * from './json-checker.ts';
export * from './typescript-thread.ts';
