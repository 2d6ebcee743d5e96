export * from './schedule.ts';
export * from './webhook.ts';
