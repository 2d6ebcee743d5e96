import type { FromSchema } from 'json-schema-to-ts';
import type { DestinationType } from '../../engine/plugins/index.ts';
import type { FieldError } from '../../engine/model/index.ts';
import { MIN_SECRET_LENGTH } from '../../engine/secrets/index.ts';

/** Sealed, and masked wherever a run would echo it: too short a value cannot be masked safely. */
const credential = { type: 'string', minLength: MIN_SECRET_LENGTH, maxLength: 4096, writeOnly: true } as const;

/** The refund operation's destination (docs/glossary.md): a shop, and the ERP it sends to. */
const shopifyDestinationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'operation', 'graphqlUrl', 'erp'],
  examples: [
    {
      type: 'shopify',
      operation: 'shopify.refund-sync-to-erp',
      graphqlUrl: 'https://acme.myshopify.com/admin/api/2025-10/graphql.json/',
      apiVersion: '2025-10',
      adminApiAccessToken: 'shpat_0123456789abcdef',
      erp: {
        apiUrl: 'https://1234567.restlets.api.netsuite.com/app/site/hosting/restlet.nl?script=101&deploy=1',
        consumerKey: 'consumer-key-0123456789',
        consumerSecret: 'consumer-secret-0123456789',
        tokenId: 'token-id-0123456789',
        tokenSecret: 'token-secret-0123456789',
        accountId: '1234567',
      },
    },
  ],
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
        limits: {
          type: 'object',
          additionalProperties: false,
          description:
            "What the account allows, shared by every flow that sends to it: the runs' requests to the account " +
            'draw on one outbound budget, which never lets more than `concurrency` in flight (and fewer while the ' +
            'account refuses with its concurrency error) nor more than `ratePerSecond` a second.',
          properties: {
            concurrency: {
              type: 'integer',
              minimum: 1,
              maximum: 1000,
              description: 'Concurrent requests the account allows: 15, plus 10 per SuiteCloud Plus licence.',
            },
            ratePerSecond: {
              type: 'integer',
              minimum: 1,
              maximum: 10_000,
              description:
                'Requests a second the account (or a gateway in front of it) allows: at most that many in any second.',
            },
          },
        },
      },
    },
  },
} as const;

export type ShopifyDestinationBody = FromSchema<typeof shopifyDestinationSchema>;

/** Which of the two ways to reach the shop was given: exactly one must be. */
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

/** A body split into what is shown (settings) and what is sealed (credentials). */
function splitBody(body: ShopifyDestinationBody) {
  const { adminApiAccessToken, clientId, clientSecret, erp, ...settings } = body;
  const { consumerKey, consumerSecret, tokenId, tokenSecret, ...erpSettings } = erp;
  return {
    settings: { ...settings, erp: erpSettings },
    credentials: {
      adminApiAccessToken,
      clientId,
      clientSecret,
      erp: { consumerKey, consumerSecret, tokenId, tokenSecret },
    },
    credentialsSet: [
      ...Object.entries({ adminApiAccessToken, clientId, clientSecret })
        .filter(([, value]) => value !== undefined)
        .map(([field]) => `$.${field}`),
      '$.erp.consumerKey',
      '$.erp.consumerSecret',
      '$.erp.tokenId',
      '$.erp.tokenSecret',
    ],
  };
}

/** What a `shopify` destination keeps as settings, and what it seals: as the operations open them. */
export type ShopifySettings = ReturnType<typeof splitBody>['settings'];
export type ShopifyCredentials = ReturnType<typeof splitBody>['credentials'];

/** The `shopify` destination type: a shop (an Admin API token, or an app's client credentials) and its ERP. */
export const shopifyDestinationType: DestinationType = {
  type: 'shopify',
  schema: shopifyDestinationSchema,
  errors: (body, at) => shopAccessErrors(body as ShopifyDestinationBody, at),
  addresses: (body) => {
    const { graphqlUrl, erp } = body as ShopifyDestinationBody;
    return [
      { path: 'graphqlUrl', url: graphqlUrl },
      { path: 'erp.apiUrl', url: erp.apiUrl },
    ];
  },
  split: (body) => splitBody(body as ShopifyDestinationBody),
};
