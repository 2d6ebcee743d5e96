/**
 * The OpenAPI 3.1 document, built from the routes' schemas, and the examples it shows.
 */
export { json, problem } from './answers.ts';
export { openApiDocument, responsesOf } from './openapi.ts';
