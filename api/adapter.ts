import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express, { Router, type Request, type Response } from 'express';
import { type FlowDocument, SchemaValidator } from '../engine/model/index.ts';
import { secretContext } from '../engine/secrets/index.ts';
import { isTerminal } from '../engine/store/index.ts';
import { constantTimeEqual } from '../engine/triggers/index.ts';
import type { ApiContext } from './context.ts';
import { checkedBody, maintenanceProblem, throttledProblem, watchRun } from './flow-url/index.ts';
import { json, problem } from './openapi/index.ts';
import { HttpProblem, sendProblem } from './http/index.ts';
import { defineRoute, fromRequest } from './route-kit/index.ts';

/**
 * The deprecated HTTP adapter (docs/glossary.md): `POST /api/adp/<store>/egress/sync-refund-to-erp-api`, the
 * settings in headers, the refund webhook JSON as the body. It runs the same operation on the same
 * queue as a flow would: the headers become a sealed destination, the call becomes a message of
 * the tenant's adapter flow (flows/adapter-refund-sync-to-erp.json), and the answer waits for the run.
 */
export const ADAPTER_PATH = '/api/adp/:store/egress/sync-refund-to-erp-api';
const ADAPTER_OPENAPI_PATH = ADAPTER_PATH.replace(':store', '{store}');
const ADAPTER_KEY_SECRET = 'ADAPTER_API_KEY';
const adapterFlow: FlowDocument = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../flows/adapter-refund-sync-to-erp.json'), 'utf8'),
);
/** RFC 9745: deprecated since 2026-01-01. */
const DEPRECATION_HEADERS = {
  Deprecation: '@1767225600',
  Link: '</api/v1/editable-flows>; rel="successor-version"; title="a flow with shopify.orders-import-list"',
};
const REFUND_GID = /^gid:\/\/shopify\/Refund\/\d+$/;
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

function settingsFrom(req: Request, settingsValidator: SchemaValidator<unknown>): AdapterSettings {
  const erp: Record<string, string | undefined> = {};
  const settings: Record<string, unknown> = { type: 'shopify', operation: 'shopify.refund-sync-to-erp', erp };
  for (const [header, field] of settingHeaders) {
    const value = req.get(header);
    if (field.startsWith('erp.')) erp[field.slice(4)] = value;
    else settings[field] = value;
  }
  for (const key of Object.keys(erp)) if (erp[key] === undefined) delete erp[key];
  for (const key of Object.keys(settings)) if (settings[key] === undefined) delete settings[key];
  const errors = settingsValidator
    .errors(settings)
    .map((error) => ({ ...error, path: headerOf.get(error.path) ?? '$.headers' }));
  if (errors.length > 0)
    throw new HttpProblem(400, 'Invalid settings', 'the adapter settings headers are missing or malformed', { errors });
  return settings as AdapterSettings;
}

/** One destination per shop and ERP account: repeated calls update it (credentials may rotate). */
function destinationName(settings: AdapterSettings): string {
  const identity = `${settings.graphqlUrl}\0${settings.erp.apiUrl}\0${settings.erp.accountId}`;
  return `adp-${createHash('sha256').update(identity).digest('hex').slice(0, 24)}`;
}

export function adapterRoutes(context: ApiContext, options: { bodyLimitBytes: number; waitMs: number }): Router {
  const { store, keyring, intake } = context;
  const shopify = context.destinationTypes.shopify;
  const settingsValidator = new SchemaValidator<unknown>(shopify.schema, 'adapter settings');
  const router = Router();
  router.post(
    ADAPTER_PATH,
    (_req, res, next) => {
      res.set(DEPRECATION_HEADERS);
      next();
    },
    express.raw({ type: () => true, limit: options.bodyLimitBytes }),
    async (req: Request, res: Response) => {
      if (req.params.store !== 'shopify')
        throw new HttpProblem(
          404,
          'Unknown store',
          `the adapter serves the store "shopify", not "${req.params.store}"`,
        );
      // The key names its tenant; it is checked before anything is written.
      const apiKey = req.get('x-api-key') ?? '';
      const tenantId = apiKey.slice(0, Math.max(0, apiKey.indexOf('.')));
      const [sealed] = TENANT.test(tenantId) ? await store.sealedSecrets(tenantId, [ADAPTER_KEY_SECRET]) : [];
      if (!sealed || !constantTimeEqual(keyring.open(sealed, secretContext(tenantId, ADAPTER_KEY_SECRET)), apiKey)) {
        throw new HttpProblem(401, 'Invalid API key', 'x-api-key is missing or not a valid adapter key');
      }
      const settings = settingsFrom(req, settingsValidator);
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const body = await checkedBody(intake, rawBody, req.get('content-type'));
      // A refund webhook is a few kilobytes: parsed here, where its id is needed.
      const refund = JSON.parse(body.text) as { admin_graphql_api_id?: unknown } | null;
      if (typeof refund?.admin_graphql_api_id !== 'string' || !REFUND_GID.test(refund.admin_graphql_api_id)) {
        throw new HttpProblem(400, 'Invalid refund', 'the body must be a refunds/create webhook', {
          errors: [
            { path: '$.body.admin_graphql_api_id', message: "must be the refund's GID, like gid://shopify/Refund/123" },
          ],
        });
      }
      const destination = destinationName(settings);
      await fromRequest('$.headers', () => context.destinations.put(tenantId, destination, settings));
      const idempotencyKey = req.get('idempotency-key');
      const result = await intake
        .accept({
          tenantId,
          flowKey: adapterFlow.key,
          rawBody,
          body,
          query: {},
          // Only what the run needs: the credentials stay in the sealed destination.
          headers: {
            'x-api-key': apiKey,
            'x-shopify-topic': 'refunds/create',
            'content-type': 'application/json',
            ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
          },
          ownHeaders: { 'x-adapter-destination': destination, 'x-store-graphql-url': settings.graphqlUrl },
        })
        .catch(() => {
          // Not stored or not enqueued: nothing was accepted, the caller retries.
          throw new HttpProblem(503, 'Not accepted', 'the call could not be stored; retry later', {
            headers: { 'Retry-After': '5' },
          });
        });
      if (result.outcome === 'maintenance') throw maintenanceProblem(result.retryAfterSeconds);
      if (result.outcome === 'throttled') throw throttledProblem(result);
      if (result.outcome === 'unverified')
        throw new HttpProblem(401, 'Invalid API key', 'the adapter key changed during the call');
      if (result.outcome === 'invalid')
        throw new HttpProblem(400, 'Invalid call', `${result.field} ${result.reason}`, {
          errors: [{ path: result.field, message: result.reason }],
        });
      if (result.outcome === 'no-flow') {
        throw new HttpProblem(
          404,
          'No adapter flow',
          "this tenant's adapter flow is missing or inactive: create an adapter key again (POST /api/v1/adapter-keys)",
        );
      }
      const ids = { messageId: result.messageId, runId: result.runId };
      const found = await watchRun(context.store, tenantId, result.runId, options.waitMs, ({ run }) =>
        isTerminal(run.status),
      );
      if (!found || !isTerminal(found.run.status))
        return res.status(202).json({ ...ids, status: found?.run.status ?? 'queued' });
      const { run, steps } = found;
      const sync = steps.find((step) => step.key === 'sync');
      if (run.status === 'succeeded') {
        // The operation keeps the record it sent in its send step's checkpoint.
        const sent = steps.find((step) => step.key === 'sync/send-to-erp');
        return res.status(200).json((sent?.output as { record?: unknown } | null)?.record ?? null);
      }
      if (run.status === 'skipped') {
        return sendProblem(
          res,
          new HttpProblem(
            409,
            'Already exported',
            (sync?.output as { reason?: string } | null)?.reason ?? 'the refund was exported before',
            ids,
          ),
        );
      }
      return sendProblem(
        res,
        new HttpProblem(502, 'Refund sync failed', run.error?.message ?? `the run ended ${run.status}`, {
          ...ids,
          errorKind: run.error?.kind,
        }),
      );
    },
  );
  return router;
}

/** `POST /api/v1/adapter-keys`: a new key for the adapter route (the old one stops working), and the adapter flow. */
export function adapterKeyRoutes(context: ApiContext) {
  const { baseUrl } = context;
  return [
    defineRoute({
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
      async handle({ tenantId }) {
        const apiKey = `${tenantId}.${randomBytes(24).toString('base64url')}`;
        await context.values.putSecret(tenantId, ADAPTER_KEY_SECRET, apiKey);
        const flow = await context.flows.installed(tenantId, adapterFlow);
        return {
          status: 201,
          body: { apiKey, url: `${baseUrl()}${ADAPTER_PATH.replace(':store', 'shopify')}`, flowId: flow.id },
        };
      },
    }),
  ];
}

/** The adapter route in the OpenAPI document (it is served outside the route table). */
export const adapterOpenApiPaths = {
  [ADAPTER_OPENAPI_PATH]: {
    post: {
      operationId: 'syncRefundThroughAdapter',
      tags: ['Destination'],
      deprecated: true,
      security: [],
      summary: '[DEPRECATED] Refund sync to ERP through the HTTP adapter',
      description:
        'Authenticated by x-api-key (POST /api/v1/adapter-keys). The settings come in headers and are kept only ' +
        'sealed. Runs shopify.refund-sync-to-erp on the queue and waits for it (ADAPTER_WAIT_MS). Every answer ' +
        'carries Deprecation and Link (successor-version).',
      parameters: [
        { name: 'store', in: 'path', required: true, schema: { const: 'shopify' } },
        ...['x-api-key', ...settingHeaders.map(([header]) => header)].map((name) => ({
          name,
          in: 'header',
          required: true,
          schema: { type: 'string' },
        })),
        { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } },
      ],
      requestBody: {
        content: json({ description: 'The refunds/create webhook JSON (admin_graphql_api_id is required).' }),
      },
      responses: {
        200: { description: 'The run succeeded: the Refund record that was sent.' },
        202: {
          description: 'Still running after the wait: its ids.',
          content: json({
            type: 'object',
            properties: { messageId: { type: 'string' }, runId: { type: 'string' }, status: { type: 'string' } },
          }),
        },
        400: problem('A settings header or the body is missing or malformed.'),
        401: problem('x-api-key is missing or wrong.'),
        409: problem('The refund was exported before: nothing was sent.'),
        429: problem("Over the tenant's intake quota: nothing was recorded; retry after Retry-After seconds."),
        502: problem("The run failed: the reason (e.g. the ERP's message)."),
      },
    },
  },
};
