import type { FromSchema } from 'json-schema-to-ts';
import { openDestination } from '../../engine/destinations.ts';
import { NotFoundError, ValidationError, type FieldError } from '../../engine/errors.ts';
import { destinationSchema } from '../../engine/resources.ts';
import { unreachableFromOutside } from '../../engine/network.ts';
import { destinationContext } from '../../engine/secrets/keyring.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route.ts';
import { byNameRoutes } from './by-name.ts';

const credential = { type: 'string', minLength: 1, maxLength: 4096, writeOnly: true } as const;

/** The seed's "Destination configuration for the refund operation": a shop, and the ERP it sends to. */
export const shopifyDestinationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'operation', 'graphqlUrl', 'erp'],
  properties: {
    type: { const: 'shopify' },
    operation: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'The operation it is configured for, e.g. shopify.refund-sync-to-erp.',
    },
    graphqlUrl: {
      type: 'string',
      pattern: '^https?://[^\\s]+/$',
      description: "The shop's URL for the Admin GraphQL API, ending in a slash.",
    },
    apiVersion: {
      type: 'string',
      pattern: '^\\d{4}-\\d{2}$',
      description: 'Admin API version (YYYY-MM) the operations call; 2025-10 when absent.',
    },
    adminApiAccessToken: { ...credential, description: 'Either this, or clientId and clientSecret.' },
    clientId: { ...credential, description: "The app's client ID (API key), with clientSecret." },
    clientSecret: credential,
    erp: {
      type: 'object',
      additionalProperties: false,
      required: ['apiUrl', 'consumerKey', 'consumerSecret', 'tokenId', 'tokenSecret', 'accountId'],
      description: 'Token-based (OAuth 1.0a) credentials of the ERP endpoint that receives refunds.',
      properties: {
        apiUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
        consumerKey: credential,
        consumerSecret: credential,
        tokenId: credential,
        tokenSecret: credential,
        accountId: {
          type: 'string',
          pattern: '^[A-Za-z0-9_-]{1,64}$',
          description: 'Account id (realm), e.g. 1234567 or 1234567_SB1.',
        },
      },
    },
  },
} as const;

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: {
    name: {
      type: 'string',
      pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$',
      description: 'Named in a node\'s config as "destination".',
    },
  },
} as const;

/** Which of the seed's two ways to reach the shop was given: exactly one must be. */
function shopAccessErrors(
  body: { adminApiAccessToken?: string; clientId?: string; clientSecret?: string },
  at: string,
): FieldError[] {
  const token = body.adminApiAccessToken !== undefined;
  const client = body.clientId !== undefined || body.clientSecret !== undefined;
  if (token && client)
    return [
      {
        path: `${at}.adminApiAccessToken`,
        message: 'give either adminApiAccessToken, or clientId and clientSecret, not both',
      },
    ];
  if (!token && !client) return [{ path: at, message: 'needs adminApiAccessToken, or clientId and clientSecret' }];
  if (client && body.clientId === undefined)
    return [{ path: `${at}.clientId`, message: 'is required with clientSecret' }];
  if (client && body.clientSecret === undefined)
    return [{ path: `${at}.clientSecret`, message: 'is required with clientId' }];
  return [];
}

const subscriptionSchema = {
  type: 'object',
  required: ['id', 'topic', 'uri', 'apiVersion'],
  properties: {
    id: { type: 'string', description: "The subscription's id in the shop." },
    topic: { type: 'string' },
    uri: { type: 'string', description: 'The flow URL the shop now delivers to.' },
    apiVersion: { type: 'string', description: 'Webhook API version (YYYY-MM).' },
    warnings: {
      type: 'array',
      items: { type: 'string' },
      description: 'For example: the address is one the shop cannot reach.',
    },
  },
} as const;

export type ShopifyDestinationBody = FromSchema<typeof shopifyDestinationSchema>;

/** Validates the shop access rule, seals the credentials and stores the destination (also for the adapter route). */
export async function putShopifyDestination(
  { store, keyring }: Pick<ApiContext, 'store' | 'keyring'>,
  tenantId: string,
  name: string,
  body: ShopifyDestinationBody,
  at: string,
) {
  const errors = shopAccessErrors(body, at);
  if (errors.length > 0) throw new ValidationError('Invalid destination', errors);
  const { adminApiAccessToken, clientId, clientSecret, erp, ...settings } = body;
  const { consumerKey, consumerSecret, tokenId, tokenSecret, ...erpSettings } = erp;
  const credentials = {
    adminApiAccessToken,
    clientId,
    clientSecret,
    erp: { consumerKey, consumerSecret, tokenId, tokenSecret },
  };
  const credentialsSet = [
    ...Object.entries({ adminApiAccessToken, clientId, clientSecret })
      .filter(([, value]) => value !== undefined)
      .map(([field]) => `$.${field}`),
    '$.erp.consumerKey',
    '$.erp.consumerSecret',
    '$.erp.tokenId',
    '$.erp.tokenSecret',
  ];
  return store.putDestination(tenantId, {
    name,
    type: body.type,
    settings: { ...settings, erp: erpSettings },
    credentialsSet,
    sealedCredentials: keyring.seal(JSON.stringify(credentials), destinationContext(tenantId, name)),
  });
}

export function destinationRoutes(context: ApiContext) {
  const { store, keyring, webhookSubscribers, baseUrl } = context;
  const base = '/api/v1/destinations';
  return [
    defineRoute({
      method: 'put',
      path: `${base}/{name}`,
      tag: 'Destination',
      scope: 'destinations:write',
      summary: 'Create or replace a destination',
      description:
        'Credentials are write-only: they are sealed (AES-256-GCM) and never shown again; send them all on every replace.',
      params: nameParams,
      body: shopifyDestinationSchema,
      responses: {
        200: { description: 'Replaced.', schema: destinationSchema },
        201: { description: 'Created.', schema: destinationSchema },
      },
      async handle({ tenantId, params, body }) {
        const { destination, created } = await putShopifyDestination(context, tenantId, params.name, body, '$.body');
        return { status: created ? 201 : 200, body: destination };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{name}/webhooks`,
      tag: 'Destination',
      scope: 'destinations:write',
      summary: "Register a flow URL as a webhook subscription in the destination's shop",
      description:
        "Replaces the seed's manual webhook setup: the shop delivers the topic (JSON, the destination's API version) to the flow's URL.",
      params: nameParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['flowId'],
        properties: {
          flowId: { type: 'string', minLength: 1, description: 'The flow whose URL receives the deliveries.' },
          topic: { enum: ['refunds/create'], default: 'refunds/create' },
        },
      },
      responses: {
        201: { description: 'Subscribed.', schema: subscriptionSchema },
        502: { description: 'The shop refused or answered something else: its answer is in detail.' },
        503: { description: 'The shop could not be reached: retry later.' },
      },
      async handle({ tenantId, params, body }) {
        const flow = await store.getFlow(tenantId, body.flowId);
        if (!flow)
          throw new ValidationError('Unknown flow', [{ path: '$.body.flowId', message: `no flow ${body.flowId}` }]);
        const destination = await openDestination(store, keyring, tenantId, params.name);
        if (!destination) throw new NotFoundError(`no destination ${params.name}`);
        const subscriber = webhookSubscribers[destination.type];
        const topic = body.topic ?? 'refunds/create';
        if (!subscriber?.topics.includes(topic)) {
          throw new ValidationError('Unsupported topic', [
            { path: '$.body.topic', message: `a ${destination.type} destination cannot subscribe to ${topic}` },
          ]);
        }
        const uri = `${baseUrl()}/hooks/${encodeURIComponent(tenantId)}/${encodeURIComponent(flow.key)}`;
        const subscription = await subscriber.subscribe(destination, { uri, topic });
        const unreachable = unreachableFromOutside(new URL(uri));
        const warnings = unreachable
          ? [
              `${new URL(uri).hostname} is ${unreachable}: ${destination.type} cannot deliver to it; set PUBLIC_URL to an address it can reach`,
            ]
          : [];
        return { status: 201, body: warnings.length > 0 ? { ...subscription, warnings } : subscription };
      },
    }),
    ...byNameRoutes({
      base,
      tag: 'Destination',
      noun: ['destination', 'destinations'],
      item: destinationSchema,
      nameParams,
      scopes: { read: 'destinations:read', write: 'destinations:write' },
      list: (tenantId, page) => store.listDestinations(tenantId, page),
      get: (tenantId, name) => store.getDestination(tenantId, name),
      remove: (tenantId, name) => store.deleteDestination(tenantId, name),
    }),
  ];
}
