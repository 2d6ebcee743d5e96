export * from './compile.ts';
