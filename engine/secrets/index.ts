export * from './keyring.ts';
