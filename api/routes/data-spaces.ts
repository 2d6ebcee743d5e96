import { dataDocumentSchema, dataSpaceSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema, byNameRoutes } from '../route-kit/index.ts';

/** Most documents one bulk import takes (the body size limit applies too). */
export const MAX_BULK_DOCUMENTS = 1000;

const spaceName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$' } as const;
const documentKey = { type: 'string', minLength: 1, maxLength: 512 } as const;
/** A document is any JSON but null: a document without a value is deleted instead. */
const documentValue = {
  not: { type: 'null' },
  description: 'Any JSON but null (delete the document instead).',
  examples: [{ erpItemId: 4711, unit: 'each' }],
} as const;
const spaceParams = { type: 'object', required: ['name'], properties: { name: spaceName } } as const;
const documentParams = {
  type: 'object',
  required: ['name', 'key'],
  properties: { name: spaceName, key: { ...documentKey, description: 'URL-encoded.' } },
} as const;
const writtenSchema = {
  type: 'object',
  required: ['created', 'updated'],
  properties: { created: { type: 'integer' }, updated: { type: 'integer' } },
} as const;

/** Data spaces (tag DataSpace): named collections of JSON documents per tenant. */
export function dataSpaceRoutes({ dataSpaces }: ApiContext) {
  const base = '/api/v1/data-spaces';
  return [
    defineRoute({
      method: 'put',
      path: `${base}/{name}`,
      tag: 'DataSpace',
      scope: 'dataspaces:write',
      summary: 'Create a data space (or change its description)',
      params: spaceParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: { description: { type: 'string', maxLength: 500 } },
        examples: [{ description: "Shopify SKU to the ERP's item id" }],
      },
      responses: {
        200: { description: 'Changed.', schema: dataSpaceSchema },
        201: { description: 'Created.', schema: dataSpaceSchema },
      },
      async handle({ tenantId, params, body }) {
        const { space, created } = await dataSpaces.put(tenantId, params.name, body.description ?? null);
        return { status: created ? 201 : 200, body: space };
      },
    }),
    ...byNameRoutes({
      base,
      tag: 'DataSpace',
      noun: ['data space', 'data spaces'],
      item: dataSpaceSchema,
      nameParams: spaceParams,
      scopes: { read: 'dataspaces:read', write: 'dataspaces:write' },
      records: dataSpaces,
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{name}/documents`,
      tag: 'DataSpace',
      scope: 'dataspaces:read',
      summary: 'List the documents of a data space by key',
      params: spaceParams,
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...pageQuerySchema,
          prefix: { type: 'string', maxLength: 512, description: 'Only keys that start with it.' },
        },
      },
      responses: { 200: { description: 'A page of documents.', schema: connectionSchema(dataDocumentSchema) } },
      handle: async ({ tenantId, params, query }) => ({
        body: await dataSpaces.listDocuments(tenantId, params.name, { prefix: query.prefix }, query),
      }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{name}/documents/bulk`,
      tag: 'DataSpace',
      scope: 'dataspaces:write',
      summary: `Create or replace up to ${MAX_BULK_DOCUMENTS} documents at once, all or none`,
      params: spaceParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['documents'],
        properties: {
          documents: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_BULK_DOCUMENTS,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['key', 'value'],
              properties: { key: documentKey, value: documentValue },
            },
          },
        },
      },
      responses: { 200: { description: 'How many documents were created and replaced.', schema: writtenSchema } },
      handle: async ({ tenantId, params, body }) => ({
        body: await dataSpaces.putDocuments(tenantId, params.name, body.documents),
      }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{name}/documents/{key}`,
      tag: 'DataSpace',
      scope: 'dataspaces:write',
      summary: 'Create or replace a document',
      params: documentParams,
      body: { type: 'object', additionalProperties: false, required: ['value'], properties: { value: documentValue } },
      responses: {
        200: { description: 'Replaced.', schema: dataDocumentSchema },
        201: { description: 'Created.', schema: dataDocumentSchema },
      },
      async handle({ tenantId, params, body }) {
        const { document, created } = await dataSpaces.putDocument(tenantId, params.name, {
          key: params.key,
          value: body.value,
        });
        return { status: created ? 201 : 200, body: document };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{name}/documents/{key}`,
      tag: 'DataSpace',
      scope: 'dataspaces:read',
      summary: 'Get a document',
      params: documentParams,
      responses: { 200: { description: 'The document.', schema: dataDocumentSchema } },
      handle: async ({ tenantId, params }) => ({
        body: await dataSpaces.getDocument(tenantId, params.name, params.key),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{name}/documents/{key}`,
      tag: 'DataSpace',
      scope: 'dataspaces:write',
      summary: 'Delete a document',
      params: documentParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        await dataSpaces.deleteDocument(tenantId, params.name, params.key);
        return { status: 204 };
      },
    }),
  ];
}
