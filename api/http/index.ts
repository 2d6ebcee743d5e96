/**
 * HTTP below everything else: problems (RFC 9457) and their catalog, bodies read and checked, the request log.
 */
export { bodyFault, checkedBody, jsonBodies } from './json-body.ts';
export { problemCatalog } from './problem-types.ts';
export { answerError, HttpProblem, problemHandler, sendProblem } from './problem.ts';
export { requestLog, trackRequest } from './request-log.ts';
