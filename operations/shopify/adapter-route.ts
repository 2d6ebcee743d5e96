import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  type FamilyRequest,
  type FamilyRoutePlatform,
  type PublicRoute,
  RouteRefusal,
  type TenantRoute,
} from '../../engine/plugins/index.ts';
import { type FlowDocument, rerooted, SchemaValidator } from '../../engine/model/index.ts';
import { isTerminal } from '../../engine/store/index.ts';
import { shopifyDestinationType } from './destination-type.ts';
import { REFUND_GID } from './refund-sync-to-erp.ts';

/**
 * The deprecated HTTP adapter (docs/glossary.md): `POST /api/adp/<store>/egress/sync-refund-to-erp-api`, the
 * settings in headers, the refund webhook JSON as the body. It runs the same operation on the same
 * queue as a flow would: the headers become a sealed destination, the call becomes a message of
 * the tenant's adapter flow (flows/adapter-refund-sync-to-erp.json), and the answer waits for the run.
 */
const ADAPTER_PATH = '/api/adp/{store}/egress/sync-refund-to-erp-api';
const ADAPTER_KEY_SECRET = 'ADAPTER_API_KEY';
const adapterFlow: FlowDocument = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../flows/adapter-refund-sync-to-erp.json'), 'utf8'),
);
const TENANT = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/;

/** Where each setting header goes in a destination, so one schema validates both. */
const settingHeaders = [
  ['x-store-graphql-url', 'graphqlUrl'],
  ['x-store-access-token', 'adminApiAccessToken'],
  ['x-erp-api-url', 'erp.apiUrl'],
  ['x-erp-consumer-key', 'erp.consumerKey'],
  ['x-erp-consumer-secret', 'erp.consumerSecret'],
  ['x-erp-token-id', 'erp.tokenId'],
  ['x-erp-token-secret', 'erp.tokenSecret'],
  ['x-erp-account-id', 'erp.accountId'],
] as const;
const headerOf = new Map<string, string>(
  settingHeaders.map(([header, field]) => [`$.${field}`, `$.headers["${header}"]`]),
);
/** The settings headers as a body of the `shopify` destination type (what the adapter reads of it). */
type AdapterSettings = Record<string, unknown> & {
  type: string;
  graphqlUrl: string;
  erp: { apiUrl: string; accountId: string };
};

const settingsValidator = new SchemaValidator<unknown>(shopifyDestinationType.schema, 'adapter settings');

function settingsFrom(request: FamilyRequest): AdapterSettings {
  const erp: Record<string, string | undefined> = {};
  const settings: Record<string, unknown> = { type: 'shopify', operation: 'shopify.refund-sync-to-erp', erp };
  for (const [header, field] of settingHeaders) {
    const value = request.header(header);
    if (field.startsWith('erp.')) erp[field.slice(4)] = value;
    else settings[field] = value;
  }
  for (const key of Object.keys(erp)) if (erp[key] === undefined) delete erp[key];
  for (const key of Object.keys(settings)) if (settings[key] === undefined) delete settings[key];
  const errors = settingsValidator
    .errors(settings)
    .map((error) => ({ ...error, path: headerOf.get(error.path) ?? '$.headers' }));
  if (errors.length > 0)
    throw new RouteRefusal(400, 'Invalid settings', 'the adapter settings headers are missing or malformed', {
      errors,
    });
  return settings as AdapterSettings;
}

/** One destination per shop and ERP account: repeated calls update it (credentials may rotate). */
function destinationName(settings: AdapterSettings): string {
  const identity = `${settings.graphqlUrl}\0${settings.erp.apiUrl}\0${settings.erp.accountId}`;
  return `adp-${createHash('sha256').update(identity).digest('hex').slice(0, 24)}`;
}

/** The tenant the key names (`<tenant>.<random>`), once the key is found to be its adapter key. */
async function keyTenant(request: FamilyRequest, platform: FamilyRoutePlatform): Promise<string> {
  const apiKey = request.header('x-api-key') ?? '';
  const tenantId = apiKey.slice(0, Math.max(0, apiKey.indexOf('.')));
  if (!TENANT.test(tenantId) || !(await platform.secretMatches(tenantId, ADAPTER_KEY_SECRET, apiKey)))
    throw new RouteRefusal(401, 'Invalid API key', 'x-api-key is missing or not a valid adapter key');
  return tenantId;
}

/** Refuses a body that is not a refund webhook (checked as a flow URL checks it: a few kilobytes, parsed here). */
function assertRefundWebhook(text: string) {
  const refund = JSON.parse(text) as { admin_graphql_api_id?: unknown } | null;
  const gid = refund?.admin_graphql_api_id;
  if (typeof gid !== 'string' || !REFUND_GID.test(gid))
    throw new RouteRefusal(400, 'Invalid refund', 'the body must be a refunds/create webhook', {
      errors: [
        { path: '$.body.admin_graphql_api_id', message: "must be the refund's GID, like gid://shopify/Refund/123" },
      ],
    });
}

async function syncRefund(request: FamilyRequest, platform: FamilyRoutePlatform) {
  if (request.params.store !== 'shopify')
    throw new RouteRefusal(
      404,
      'Unknown store',
      `the adapter serves the store "shopify", not "${request.params.store}"`,
    );
  // The key names its tenant; it is checked before anything is written.
  const tenantId = await keyTenant(request, platform);
  const settings = settingsFrom(request);
  const body = await platform.checkedJson(request.body, request.header('content-type'));
  assertRefundWebhook(body.text);
  const destination = destinationName(settings);
  await platform.putDestination(tenantId, destination, settings).catch((error: unknown) => {
    throw rerooted(error, '$.headers');
  });
  const idempotencyKey = request.header('idempotency-key');
  const ids = await platform.deliver({
    tenantId,
    flowKey: adapterFlow.key,
    rawBody: request.body,
    body,
    // Only what the run needs: the credentials stay in the sealed destination.
    headers: {
      'x-api-key': request.header('x-api-key') ?? '',
      'x-shopify-topic': 'refunds/create',
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ownHeaders: { 'x-adapter-destination': destination, 'x-store-graphql-url': settings.graphqlUrl },
  });
  if (!ids)
    throw new RouteRefusal(
      404,
      'No adapter flow',
      "this tenant's adapter flow is missing or inactive: create an adapter key again (POST /api/v1/adapter-keys)",
    );
  const found = await platform.finishedRun(tenantId, ids.runId);
  if (!found || !isTerminal(found.run.status))
    return { status: 202, body: { ...ids, status: found?.run.status ?? 'queued' } };
  const { run, steps } = found;
  if (run.status === 'succeeded') {
    // The operation keeps the record it sent in its send step's checkpoint.
    const sent = steps.find((step) => step.key === 'sync/send-to-erp');
    return { status: 200, body: (sent?.output as { record?: unknown } | null)?.record ?? null };
  }
  if (run.status === 'skipped') {
    const sync = steps.find((step) => step.key === 'sync');
    const reason = (sync?.output as { reason?: string } | null)?.reason ?? 'the refund was exported before';
    throw new RouteRefusal(409, 'Already exported', reason, ids);
  }
  throw new RouteRefusal(502, 'Refund sync failed', run.error?.message ?? `the run ended ${run.status}`, {
    ...ids,
    errorKind: run.error?.kind,
  });
}

/** The adapter route: authenticated by its key, its settings in headers. */
export const adapterRoute: PublicRoute = {
  access: 'public',
  method: 'post',
  path: ADAPTER_PATH,
  // RFC 9745: deprecated since 2026-01-01.
  headers: {
    Deprecation: '@1767225600',
    Link: '</api/v1/editable-flows>; rel="successor-version"; title="a flow with shopify.orders-import-list"',
  },
  handle: syncRefund,
  operationId: 'syncRefundThroughAdapter',
  tag: 'Destination',
  deprecated: true,
  summary: '[DEPRECATED] Refund sync to ERP through the HTTP adapter',
  description:
    'Authenticated by x-api-key (POST /api/v1/adapter-keys). The settings come in headers and are kept only ' +
    'sealed. Runs shopify.refund-sync-to-erp on the queue and waits for it (ADAPTER_WAIT_MS). Every answer ' +
    'carries Deprecation and Link (successor-version).',
  parameters: [
    { name: 'store', in: 'path', required: true, schema: { const: 'shopify' } },
    ...['x-api-key', ...settingHeaders.map(([header]) => header)].map((name) => ({
      name,
      in: 'header' as const,
      required: true,
      schema: { type: 'string' },
    })),
    { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } },
  ],
  body: 'The refunds/create webhook JSON (admin_graphql_api_id is required).',
  responses: {
    200: { description: 'The run succeeded: the Refund record that was sent.' },
    202: {
      description: 'Still running after the wait: its ids.',
      schema: {
        type: 'object',
        properties: { messageId: { type: 'string' }, runId: { type: 'string' }, status: { type: 'string' } },
      },
    },
    400: { description: 'A settings header or the body is missing or malformed.' },
    401: { description: 'x-api-key is missing or wrong.' },
    409: { description: 'The refund was exported before: nothing was sent.' },
    429: { description: "Over the tenant's intake quota: nothing was recorded; retry after Retry-After seconds." },
    502: { description: "The run failed: the reason (e.g. the ERP's message)." },
  },
};

/** `POST /api/v1/adapter-keys`: a new key for the adapter route (the old one stops working), and the adapter flow. */
export const adapterKeyRoute: TenantRoute = {
  access: 'tenant',
  method: 'post',
  path: '/api/v1/adapter-keys',
  tag: 'Destination',
  scope: 'destinations:write',
  summary: 'Create (or rotate) the key of the deprecated HTTP adapter route',
  description:
    "The key is shown once; it is kept sealed as the secret variable ADAPTER_API_KEY. The tenant's adapter flow " +
    'is created on first use.',
  responses: {
    201: {
      description: 'The key.',
      schema: {
        type: 'object',
        required: ['apiKey', 'url', 'flowId'],
        properties: {
          apiKey: { type: 'string', description: 'Send it as x-api-key.' },
          url: { type: 'string' },
          flowId: { type: 'string' },
        },
      },
    },
  },
  async handle({ tenantId }, platform) {
    const apiKey = `${tenantId}.${randomBytes(24).toString('base64url')}`;
    await platform.putSecret(tenantId, ADAPTER_KEY_SECRET, apiKey);
    const flow = await platform.installedFlow(tenantId, adapterFlow);
    return {
      status: 201,
      body: { apiKey, url: platform.url(ADAPTER_PATH.replace('{store}', 'shopify')), flowId: flow.id },
    };
  },
};
