export * from './actions.ts';
export * from './destinations.ts';
export * from './operations.ts';
