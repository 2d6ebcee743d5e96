import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route-kit/index.ts';

export const API_VERSION = 'v1';

const versionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['product', 'api', 'commit', 'runtime', 'integrations', 'operations'],
  properties: {
    product: { type: 'string' },
    api: { type: 'string' },
    commit: { type: ['string', 'null'], description: "The build's git commit (BUILD_COMMIT, or the checkout's HEAD)." },
    runtime: {
      type: 'object',
      required: ['node', 'platform'],
      properties: { node: { type: 'string' }, platform: { type: 'string' } },
    },
    integrations: {
      type: 'object',
      description: "Per destination type, the outside system's API versions supported (the default first).",
      additionalProperties: {
        type: 'object',
        required: ['apiVersions'],
        properties: { apiVersions: { type: 'array', items: { type: 'string' } } },
      },
    },
    operations: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: "Each operation's newest version (the operations route lists every major).",
    },
  },
} as const;

/** Version information (tag Version): what is running, for bug reports and compatibility checks. */
export function versionRoutes({ build, compile, webhookSubscribers }: ApiContext) {
  const body = {
    product: build.version,
    api: API_VERSION,
    commit: build.commit,
    runtime: { node: process.version, platform: `${process.platform}-${process.arch}` },
    integrations: Object.fromEntries(
      Object.entries(webhookSubscribers).map(([type, subscriber]) => [
        type,
        { apiVersions: [...subscriber.apiVersions] },
      ]),
    ),
    operations: Object.fromEntries(
      compile.registry.list().map(({ definition }) => [definition.name, definition.version]),
    ),
  };
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/version',
      tag: 'Version',
      summary: 'Product, API, build, runtime, integration and operation versions',
      responses: { 200: { description: 'The versions.', schema: versionSchema } },
      handle: async () => ({ body }),
    }),
  ];
}
