import { json, problem, retryLater } from './answers.ts';

const readinessSchema = {
  type: 'object',
  required: ['ready', 'failed'],
  properties: {
    ready: { type: 'boolean' },
    failed: { type: 'array', items: { enum: ['store', 'redis', 'redis eviction', 'event loop'] } },
    checks: { type: 'object', description: 'For operators only.' },
  },
};
const tokenRequestSchema = {
  type: 'object',
  required: ['grant_type'],
  properties: {
    grant_type: { const: 'client_credentials' },
    client_id: { type: 'string', description: 'Unless sent in a Basic header.' },
    client_secret: { type: 'string', description: 'Unless sent in a Basic header.' },
    audience: { type: 'string' },
    scope: { type: 'string', description: 'Space-separated scopes asked for.' },
  },
  examples: [
    {
      grant_type: 'client_credentials',
      client_id: 'trb_H-0ZD_1AykL9',
      client_secret: 'the secret printed by tributary client create',
      scope: 'flows:read runs:read',
    },
  ],
} as const;

/** An OAuth error answer (RFC 6749 §5.2). */
const oauthError = (description: string) => ({
  description,
  content: json({
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  }),
});

/** Routes outside /api: token issuer, flow URLs, health. */
export function platformPaths() {
  return {
    '/oauth/token': {
      post: {
        operationId: 'issueToken',
        tags: ['Platform'],
        summary: 'Issue an access token (OAuth 2.0 client credentials)',
        description:
          'The client authenticates with HTTP Basic (client_secret_basic) or in the body (client_secret_post), ' +
          'form-encoded or JSON. `scope` asks for some of the scopes the client holds (all of them when absent); ' +
          'the answer says which were granted. Errors are RFC 6749 §5.2 JSON: `error`, `error_description`.',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': { schema: tokenRequestSchema },
            'application/json': { schema: tokenRequestSchema },
          },
        },
        responses: {
          200: {
            description: 'A bearer token.',
            content: json({
              type: 'object',
              required: ['access_token', 'token_type', 'expires_in', 'scope'],
              properties: {
                access_token: { type: 'string' },
                token_type: { const: 'Bearer' },
                expires_in: { type: 'integer' },
                scope: { type: 'string', description: 'The scopes granted, space-separated.' },
              },
            }),
          },
          400: oauthError('invalid_request, unsupported_grant_type, invalid_scope or invalid_target.'),
          401: oauthError('invalid_client: unknown client or wrong secret (with WWW-Authenticate for Basic).'),
          429: retryLater('Too many failed attempts for this client or from this address.'),
        },
      },
    },
    '/.well-known/oauth-authorization-server': {
      get: {
        operationId: 'getAuthorizationServerMetadata',
        tags: ['Platform'],
        summary: "The authorization server's metadata (RFC 8414): issuer, token endpoint, JWKS, scopes",
        security: [],
        responses: { 200: { description: 'The metadata.', content: json({ type: 'object' }) } },
      },
    },
    '/.well-known/openid-configuration': {
      get: {
        operationId: 'getOpenIdConfiguration',
        tags: ['Platform'],
        summary: 'The same metadata, where OpenID clients look for it',
        security: [],
        responses: { 200: { description: 'The metadata.', content: json({ type: 'object' }) } },
      },
    },
    '/.well-known/jwks.json': {
      get: {
        operationId: 'getJwks',
        tags: ['Platform'],
        summary: "The issuer's public signing keys",
        security: [],
        responses: { 200: { description: 'A JWK set.' } },
      },
    },
    '/hooks/{tenantId}/{flowKey}': {
      post: {
        operationId: 'deliverToFlowUrl',
        tags: ['Flow'],
        summary: 'A flow URL: start a run of the active version with this message',
        security: [],
        description:
          "Persisted and enqueued before the answer. A repeated Idempotency-Key (or the trigger's delivery id " +
          'header) returns the first message. When the flow has a reply node and the run reaches it within ' +
          'REPLY_WAIT_MS, the answer is that reply (its status, headers and body) instead of 202.',
        parameters: [
          {
            name: 'tenantId',
            in: 'path',
            required: true,
            description: 'The tenant, followed by `~` and the environment outside production: `acme`, `acme~staging`.',
            schema: { type: 'string' },
          },
          { name: 'flowKey', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } },
        ],
        requestBody: { content: json({ description: 'Any JSON.', examples: [{ id: 1001, total: 25 }] }) },
        responses: {
          202: {
            description: 'Accepted: it will run.',
            content: json({ type: 'object', properties: { messageId: { type: 'string' }, runId: { type: 'string' } } }),
          },
          200: { description: 'A repeated delivery: the first message, nothing new runs.' },
          default: {
            description:
              "The flow's reply (a reply node): the status, headers and body it made, and the ids of the message and " +
              'its run in headers of their own.',
            headers: {
              'X-Tributary-Message-Id': { description: 'The message the delivery became.', schema: { type: 'string' } },
              'X-Tributary-Run-Id': { description: 'The run that replied.', schema: { type: 'string' } },
            },
          },
          401: problem("The delivery fails the trigger's verification."),
          404: problem('No active flow at this URL.'),
          413: problem('The body is over the size limit.'),
          429: retryLater(
            "Over the tenant's intake quota (deliveries per second, or runs waiting to start): nothing was recorded; " +
              'retry after Retry-After seconds.',
          ),
          503: problem('Not stored: retry later.'),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'getHealth',
        tags: ['Platform'],
        summary: 'The process is up',
        security: [],
        responses: { 200: { description: 'Up.' } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'getReadiness',
        tags: ['Platform'],
        summary: 'Whether this process can serve: the store and Redis answer, its event loop keeps up',
        description: "Anyone gets `{ready, failed}`; an operator's credentials add the checks' details.",
        security: [],
        responses: {
          200: { description: 'Ready.', content: json(readinessSchema) },
          503: { description: 'Not ready: `failed` names what failed.', content: json(readinessSchema) },
        },
      },
    },
  };
}
