/**
 * A flow's URL: deliveries handed to intake on node:http, and waiting for a run to answer.
 */
export { accepted, checkedBody, hookHandler } from './hooks.ts';
export { watchRun } from './run-watch.ts';
