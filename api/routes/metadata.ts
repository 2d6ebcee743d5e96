import {
  NotFoundError,
  operationInfoSchema,
  resourceSchemas,
  statusEnums,
  type OperationInfo,
} from '../../engine/model/index.ts';
import { namedKinds } from '../../engine/nodes/index.ts';
import type { OperationRegistry } from '../../engine/plugins/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, wholeList } from '../route-kit/index.ts';

/** What each registered operation is, for the operations route and the API reference. */
export function operationInfos(registry: OperationRegistry): OperationInfo[] {
  return registry.list().map(({ definition }) => ({
    name: definition.name,
    kind: 'operation',
    version: definition.version,
    title: definition.title,
    description: definition.description,
    configSchema: definition.configSchema as Record<string, unknown>,
    deprecated: definition.deprecated !== undefined,
    successor: definition.deprecated?.successor ?? null,
    sideEffects: definition.sideEffects,
    fanOut: definition.fanOut ?? false,
  }));
}

/**
 * What a builder UI renders from (tag LowCodeAction and Metadata): the registered operations,
 * and the very JSON Schemas and enums the server validates with.
 */
export function metadataRoutes({ compile, build }: ApiContext) {
  // Everything a node may name in `operation`: the registered operations, then the kinds of node the engine runs.
  const operations = [
    ...operationInfos(compile.registry),
    ...namedKinds().map(
      (kind): OperationInfo => ({
        name: kind.name,
        kind: 'node',
        version: build.version,
        title: kind.title,
        description: kind.description,
        configSchema: kind.configSchema as Record<string, unknown>,
        deprecated: false,
        successor: null,
        sideEffects: kind.sideEffects,
        fanOut: false,
      }),
    ),
  ];
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/low-code-actions/operations',
      tag: 'LowCodeAction',
      scope: 'flows:read',
      summary: 'List the operations a node can run, with their config schemas',
      responses: {
        200: {
          description: 'Every registered operation and every kind of node the engine runs, in one page.',
          schema: connectionSchema(operationInfoSchema),
        },
      },
      handle: async () => ({ body: wholeList(operations) }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/metadata',
      tag: 'Metadata',
      scope: 'flows:read',
      summary: 'The JSON Schemas of every resource and of the flow document, the status enums, and the operations',
      responses: {
        200: {
          description: 'The same schemas the server validates with.',
          schema: {
            type: 'object',
            required: ['schemas', 'enums', 'operations'],
            properties: {
              schemas: { type: 'object' },
              enums: { type: 'object' },
              operations: { type: 'array', items: operationInfoSchema },
            },
          },
        },
      },
      handle: async () => ({ body: { schemas: resourceSchemas, enums: statusEnums, operations } }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/metadata/schemas/{name}',
      tag: 'Metadata',
      scope: 'flows:read',
      summary: "One resource's JSON Schema (e.g. FlowDocument, Run, Batch)",
      params: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      responses: { 200: { description: 'The schema.', schema: { type: 'object' } } },
      async handle({ params }) {
        const schema = (resourceSchemas as Record<string, object>)[params.name];
        if (!schema)
          throw new NotFoundError(`no schema ${params.name}; there are ${Object.keys(resourceSchemas).join(', ')}`);
        return { body: schema };
      },
    }),
  ];
}
