export * from './expression-cost.ts';
export * from './expression.ts';
export * from './sandbox.ts';
export * from './template.ts';
