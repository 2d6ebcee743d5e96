export * from './http-body.ts';
export * from './http-client.ts';
export * from './network.ts';
