import { Worker } from 'node:worker_threads';

/** A worker thread running a TypeScript module through tsx's loader, as the CLI does (bin/tributary.js). */
export function typeScriptThread(entry: URL, workerData?: unknown): Worker {
  const loader = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`,
    { eval: true, workerData },
  );
}
