/**
 * The OpenAPI 3.1 document, built from the routes' schemas, and the examples it shows.
 */
export { json, openApiDocument, problem } from './openapi.ts';
