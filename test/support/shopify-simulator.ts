import http from 'node:http';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import {
  execute,
  getNamedType,
  type GraphQLError,
  isLeafType,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ArgumentNode,
} from 'graphql';
import { ADMIN_API_VERSIONS, adminSchema, type AdminApiVersion } from './shopify-admin-schema.ts';

/** Shopify's timestamps are whole seconds (`2026-01-01T14:34:26Z`): so are the simulated shop's. */
export const shopifyTime = (at = Date.now()) =>
  new Date(Math.floor(at / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * A simulated Shopify shop: the Admin GraphQL API, answered from Shopify's real schema (every
 * query is validated against it, as Shopify does), with cost-based throttling, access tokens and
 * the client credentials grant, and webhooks signed the way Shopify signs them. Of the REST Admin
 * API, `GET shop.json`, under its own leaky bucket of calls (`X-Shopify-Shop-Api-Call-Limit`).
 */
export interface ShopifySimulatorOptions {
  /** A static Admin API access token the shop accepts. */
  accessToken?: string;
  /** An app that may use the client credentials grant. */
  clientId?: string;
  clientSecret?: string;
  /** Seconds an issued token lasts (Shopify: about 24 h). */
  tokenLifetimeS?: number;
  /** Points restored per second (Standard plan: 100). */
  restoreRate?: number;
  maximumAvailable?: number;
  /** Status of a THROTTLED answer: Shopify uses 200, and 429 on some paths. */
  throttledStatus?: 200 | 429;
  /** The REST bucket's size in calls (Standard plan: 40); it leaks a call a second per 20 of its size. */
  restBucketSize?: number;
}

/** A REST call and how the shop answered it. */
export interface RestCallRecord {
  status: number;
  answeredAt: number;
}

const MAX_QUERY_COST = 1000;
const MAX_PAGE = 250;
const MUTATION_COST = 10;

export interface QueryRecord {
  version: string;
  operationName?: string;
  requestedQueryCost: number;
  actualQueryCost: number | null;
  /** What it would have requested with each page as large as what came back: the least any query for the data could. */
  minimumQueryCost: number | null;
  throttled: boolean;
  errors?: unknown[];
  /** When the shop answered it (ms). */
  answeredAt: number;
  /** When the shop took its requested cost from the bucket (ms); a throttled query never was. */
  admittedAt?: number;
}

type Obj = Record<string, any>;

export class ShopifySimulator {
  readonly shop = new Shop();
  readonly queries: QueryRecord[] = [];
  readonly restCalls: RestCallRecord[] = [];
  /** Tokens issued by the client credentials grant, and requests refused for a bad token. */
  readonly counts = { grants: 0, unauthorized: 0 };
  url = '';
  /**
   * Runs before a query or mutation is executed, with its top-level fields: lets a test make another
   * client's change land first.
   */
  beforeExecute?: (fields: string[], operationName?: string) => void;
  private server?: http.Server;
  private readonly tokens = new Map<string, number>();
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly hangOn = new Set<string>();
  private bucket: { available: number; at: number };
  /** Calls in the REST bucket, as of `at`. */
  private restBucket = { calls: 0, at: Date.now() };
  private readonly options: Required<ShopifySimulatorOptions>;

  constructor(options: ShopifySimulatorOptions = {}) {
    this.options = {
      accessToken: options.accessToken ?? 'shpat_simulated',
      clientId: options.clientId ?? '',
      clientSecret: options.clientSecret ?? '',
      tokenLifetimeS: options.tokenLifetimeS ?? 86_399,
      restoreRate: options.restoreRate ?? 100,
      maximumAvailable: options.maximumAvailable ?? 2000,
      throttledStatus: options.throttledStatus ?? 200,
      restBucketSize: options.restBucketSize ?? 40,
    };
    this.bucket = { available: this.options.maximumAvailable, at: Date.now() };
    if (this.options.accessToken) this.tokens.set(this.options.accessToken, Infinity);
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () =>
        this.handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((error) => {
          res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: String(error) }));
        }),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/`;
    return this;
  }

  async close() {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Requests running this mutation are held without an answer and never applied, until `release`. */
  hang(mutation: string) {
    this.hangOn.add(mutation);
  }

  /** How many requests are held by `hang` right now. */
  get held() {
    return this.hanging.size;
  }

  release() {
    this.hangOn.clear();
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  /** Empties the cost bucket, as if other apps' calls had just used it up. */
  drainBucket() {
    this.bucket = { available: 0, at: Date.now() };
  }

  /** The points in the shop's bucket now. */
  available(): number {
    return this.refill();
  }

  /** Every issued token stops working (as after 24 h): the client must fetch a new one. */
  expireTokens() {
    for (const token of this.tokens.keys()) if (token !== this.options.accessToken) this.tokens.delete(token);
  }

  /** Delivers a webhook the way Shopify does: raw JSON body, HMAC-SHA256 of it with the app's secret. */
  async deliverWebhook(
    url: string,
    options: { topic: string; body: string; secret: string; webhookId?: string; apiVersion?: string },
  ) {
    const headers = {
      'content-type': 'application/json',
      'x-shopify-topic': options.topic,
      'x-shopify-hmac-sha256': createHmac('sha256', options.secret).update(options.body, 'utf8').digest('base64'),
      'x-shopify-shop-domain': this.shop.domain,
      'x-shopify-api-version': options.apiVersion ?? '2025-10',
      'x-shopify-webhook-id': options.webhookId ?? crypto.randomUUID(),
      'x-shopify-event-id': crypto.randomUUID(),
      'x-shopify-triggered-at': new Date().toISOString(),
    };
    const response = await fetch(url, { method: 'POST', headers, body: options.body });
    return { status: response.status, body: await response.text() };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    const send = (status: number, payload: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const url = new URL(req.url ?? '/', 'http://shop');
    if (req.method === 'POST' && url.pathname === '/admin/oauth/access_token') return send(...this.grant(req, body));
    const rest = /^\/admin\/api\/([^/]+)\/shop\.json$/.exec(url.pathname);
    if (req.method === 'GET' && rest) return this.restShop(req, res);
    const match = /^\/admin\/api\/([^/]+)\/graphql\.json$/.exec(url.pathname);
    if (req.method !== 'POST' || !match) return send(404, { errors: 'Not Found' });
    const version = match[1] as AdminApiVersion;
    if (!ADMIN_API_VERSIONS.includes(version)) return send(404, { errors: `API version ${version} is not supported` });
    const token = req.headers['x-shopify-access-token'];
    if (typeof token !== 'string' || !((this.tokens.get(token) ?? 0) > Date.now())) {
      this.counts.unauthorized++;
      return send(401, { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' });
    }
    let request: { query?: unknown; variables?: Obj; operationName?: string };
    try {
      request = JSON.parse(body);
    } catch {
      return send(400, { errors: 'Invalid JSON in request body' });
    }
    const [status, payload] = await this.graphql(version, request, res);
    if (status !== 0) send(status, payload);
  }

  /** REST `GET shop.json`: a call into the leaky bucket, or 429 when it is full, as Shopify answers. */
  private restShop(req: http.IncomingMessage, res: http.ServerResponse) {
    const token = req.headers['x-shopify-access-token'];
    if (typeof token !== 'string' || !((this.tokens.get(token) ?? 0) > Date.now())) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' }),
      );
    }
    const size = this.options.restBucketSize;
    const now = Date.now();
    const calls = Math.max(0, this.restBucket.calls - ((now - this.restBucket.at) / 1000) * (size / 20));
    if (calls + 1 > size) {
      this.restBucket = { calls, at: now };
      this.restCalls.push({ status: 429, answeredAt: now });
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2.0' });
      return res.end(
        JSON.stringify({
          errors: 'Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.',
        }),
      );
    }
    this.restBucket = { calls: calls + 1, at: now };
    this.restCalls.push({ status: 200, answeredAt: now });
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-shopify-shop-api-call-limit': `${Math.ceil(calls + 1)}/${size}`,
    });
    res.end(
      JSON.stringify({
        shop: { name: 'Tributary Test', domain: this.shop.domain, myshopify_domain: this.shop.domain },
      }),
    );
  }

  private grant(req: http.IncomingMessage, body: string): [number, unknown] {
    const form = /json/.test(req.headers['content-type'] ?? '')
      ? new URLSearchParams(JSON.parse(body))
      : new URLSearchParams(body);
    if (form.get('grant_type') !== 'client_credentials') return [400, { error: 'unsupported_grant_type' }];
    if (
      !this.options.clientId ||
      form.get('client_id') !== this.options.clientId ||
      form.get('client_secret') !== this.options.clientSecret
    ) {
      return [400, { error: 'invalid_client', error_description: 'Client authentication failed' }];
    }
    this.counts.grants++;
    const token = `shpca_${randomBytes(16).toString('hex')}`;
    this.tokens.set(token, Date.now() + this.options.tokenLifetimeS * 1000);
    return [
      200,
      { access_token: token, scope: 'read_orders,write_orders,read_returns', expires_in: this.options.tokenLifetimeS },
    ];
  }

  /** Returns [0] when the answer is held (a hanging mutation). */
  private async graphql(
    version: AdminApiVersion,
    request: { query?: unknown; variables?: Obj; operationName?: string },
    res: http.ServerResponse,
  ): Promise<[number, unknown]> {
    const schema = adminSchema(version);
    if (typeof request.query !== 'string') return [400, { errors: [{ message: 'No query string was present' }] }];
    let document: DocumentNode;
    try {
      document = parse(request.query);
    } catch (error) {
      return [200, { errors: [{ message: (error as GraphQLError).message, extensions: { code: 'parseError' } }] }];
    }
    const invalid = validate(schema, document);
    if (invalid.length > 0) {
      const errors = invalid.map((error) => ({
        message: error.message,
        locations: error.locations,
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      }));
      this.queries.push({
        answeredAt: Date.now(),
        version,
        operationName: request.operationName,
        requestedQueryCost: 0,
        actualQueryCost: null,
        minimumQueryCost: null,
        throttled: false,
        errors,
      });
      return [200, { errors }];
    }
    const variables = request.variables ?? {};
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    )!;
    const costing = new QueryCost(schema, document, variables);
    let requested: number;
    try {
      requested = costing.requested(operation);
    } catch (error) {
      return [200, { errors: [{ message: (error as Error).message, extensions: { code: 'argumentError' } }] }];
    }
    if (requested > MAX_QUERY_COST) {
      return [
        200,
        {
          errors: [
            {
              message: `Query cost is ${requested}, which exceeds the single query max cost limit (${MAX_QUERY_COST}).`,
              extensions: { code: 'MAX_COST_EXCEEDED', cost: requested, maxCost: MAX_QUERY_COST },
            },
          ],
        },
      ];
    }
    const available = this.refill();
    if (requested > available) {
      this.queries.push({
        answeredAt: Date.now(),
        version,
        operationName: operation.name?.value,
        requestedQueryCost: requested,
        actualQueryCost: null,
        minimumQueryCost: null,
        throttled: true,
      });
      return [
        this.options.throttledStatus,
        {
          errors: [
            {
              message: 'Throttled',
              extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' },
            },
          ],
          extensions: {
            cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: this.throttleStatus() },
          },
        },
      ];
    }
    const admittedAt = Date.now();
    this.bucket.available -= requested;
    const mutationFields =
      operation.operation === 'mutation'
        ? operation.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []))
        : [];
    if (mutationFields.some((name) => this.hangOn.has(name))) {
      this.hanging.add(res);
      return [0, undefined];
    }
    this.beforeExecute?.(
      operation.selectionSet.selections.flatMap((selection) =>
        selection.kind === Kind.FIELD ? [selection.name.value] : [],
      ),
      operation.name?.value,
    );
    const result = await execute({
      schema,
      document,
      variableValues: variables,
      rootValue: operation.operation === 'mutation' ? this.shop.mutations(version) : this.shop.queryRoot(),
      fieldResolver,
      typeResolver: (value: Obj) => value.__typename,
    });
    const actual = result.data ? costing.actual(operation, result.data) : requested;
    this.bucket.available = Math.min(this.options.maximumAvailable, this.bucket.available + requested - actual);
    const errors = result.errors?.map((error) => ({
      message: error.message,
      path: error.path,
      extensions: { code: error.extensions?.code ?? 'INTERNAL_SERVER_ERROR' },
    }));
    this.queries.push({
      answeredAt: Date.now(),
      version,
      operationName: operation.name?.value,
      requestedQueryCost: requested,
      actualQueryCost: actual,
      minimumQueryCost: result.data ? costing.minimum(operation, result.data) : null,
      throttled: false,
      errors,
      admittedAt,
    });
    return [
      200,
      {
        ...(errors ? { errors } : {}),
        data: result.data,
        extensions: {
          cost: { requestedQueryCost: requested, actualQueryCost: actual, throttleStatus: this.throttleStatus() },
        },
      },
    ];
  }

  private refill() {
    const now = Date.now();
    this.bucket.available = Math.min(
      this.options.maximumAvailable,
      this.bucket.available + ((now - this.bucket.at) / 1000) * this.options.restoreRate,
    );
    this.bucket.at = now;
    return this.bucket.available;
  }

  private throttleStatus() {
    return {
      maximumAvailable: this.options.maximumAvailable,
      currentlyAvailable: Math.floor(this.bucket.available),
      restoreRate: this.options.restoreRate,
    };
  }
}

/** Plain values, functions of the arguments, and arrays paginated when the schema says the field is a connection. */
const fieldResolver: GraphQLFieldResolver<Obj, unknown> = (source, args, _context, info) => {
  const value = source[info.fieldName];
  if (typeof value === 'function') return value(args);
  if (Array.isArray(value) && getNamedType(info.returnType).name.endsWith('Connection')) return paginate(value, args);
  return value ?? null;
};

function paginate(items: Obj[], args: { first?: number; last?: number; after?: string; before?: string }) {
  // Page sizes were checked with the query's cost, before it ran.
  const size = args.first ?? args.last ?? 0;
  const start = args.after ? Number(Buffer.from(args.after, 'base64url').toString()) + 1 : 0;
  const nodes = items.slice(start, start + size);
  const cursor = (index: number) => Buffer.from(String(index)).toString('base64url');
  return {
    nodes,
    edges: nodes.map((node, i) => ({ node, cursor: cursor(start + i) })),
    pageInfo: {
      hasNextPage: start + size < items.length,
      hasPreviousPage: start > 0,
      startCursor: nodes.length > 0 ? cursor(start) : null,
      endCursor: nodes.length > 0 ? cursor(start + nodes.length - 1) : null,
    },
  };
}

type CostedPart =
  | { kind: 'fragment'; selectionSet: SelectionSetNode; condition: GraphQLCompositeType; typed: boolean }
  | { kind: 'object'; key: string; selectionSet: SelectionSetNode; type: GraphQLCompositeType }
  | {
      kind: 'connection';
      key: string;
      nodes: SelectionSetNode;
      nodeType: GraphQLCompositeType;
      arguments: readonly ArgumentNode[];
    };

/** The cost Shopify requests for a document with these variables, reckoned on the Admin schema. */
export function requestedQueryCost(schema: GraphQLSchema, document: string, variables: Obj): number {
  const parsed = parse(document);
  const operation = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  return new QueryCost(schema, parsed, variables).requested(operation);
}

/**
 * Shopify's query cost, as documented: objects cost 1, scalars and enums 0, a connection 2 plus its
 * page size times the cost of one node, a mutation 10. The actual cost counts what was returned.
 */
class QueryCost {
  private readonly fragments: Map<string, FragmentDefinitionNode>;

  constructor(
    private readonly schema: GraphQLSchema,
    document: DocumentNode,
    private readonly variables: Obj,
  ) {
    this.fragments = new Map(
      document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])),
    );
  }

  requested(operation: OperationDefinitionNode): number {
    if (operation.operation === 'mutation') return MUTATION_COST * operation.selectionSet.selections.length;
    return this.cost(operation.selectionSet, this.schema.getQueryType()!, undefined);
  }

  actual(operation: OperationDefinitionNode, data: Obj): number {
    if (operation.operation === 'mutation') return this.requested(operation);
    return this.cost(operation.selectionSet, this.schema.getQueryType()!, data);
  }

  /** The requested cost had every page asked for exactly the nodes that came back (in each place, the most of any). */
  minimum(operation: OperationDefinitionNode, data: Obj): number {
    if (operation.operation === 'mutation') return this.requested(operation);
    return this.tightCost(operation.selectionSet, this.schema.getQueryType()!, [data]);
  }

  /** The static cost, with each connection's page size the most nodes it returned in any of `instances`. */
  private tightCost(selectionSet: SelectionSetNode, type: GraphQLCompositeType, instances: Obj[]): number {
    let total = 0;
    for (const part of this.parts(selectionSet, type)) {
      if (part.kind === 'fragment') {
        total += this.tightCost(part.selectionSet, part.condition, instances);
        continue;
      }
      const values = instances.flatMap((instance) => instance[part.key] ?? []);
      if (part.kind === 'object') {
        total += 1 + this.tightCost(part.selectionSet, part.type, values);
        continue;
      }
      const pages = values.map((connection: Obj) => connection.nodes as Obj[]);
      const size = pages.reduce((most: number, page: Obj[]) => Math.max(most, page.length), 0);
      total += 2 + size * (1 + this.tightCost(part.nodes, part.nodeType, pages.flat()));
    }
    return total;
  }

  /** Static when `data` is undefined; otherwise counts the objects in `data`. */
  private cost(selectionSet: SelectionSetNode, type: GraphQLCompositeType, data: Obj | undefined): number {
    let total = 0;
    for (const part of this.parts(selectionSet, type)) {
      if (part.kind === 'fragment') {
        if (data && part.typed && data.__typename !== undefined && data.__typename !== part.condition.name) continue;
        total += this.cost(part.selectionSet, part.condition, data);
        continue;
      }
      const value = data?.[part.key];
      if (data && (value === null || value === undefined)) continue;
      if (part.kind === 'object') {
        const items: (Obj | undefined)[] = data ? (Array.isArray(value) ? value : [value]) : [undefined];
        for (const item of items) total += 1 + this.cost(part.selectionSet, part.type, item);
        continue;
      }
      if (data) for (const node of value.nodes as Obj[]) total += 1 + this.cost(part.nodes, part.nodeType, node);
      else total += this.pageSize(part.arguments) * (1 + this.cost(part.nodes, part.nodeType, undefined));
      total += 2;
    }
    return total;
  }

  /** What a selection set holds that has a cost: fragments, objects (or lists of them) and connections (by `nodes`). */
  private *parts(selectionSet: SelectionSetNode, type: GraphQLCompositeType): Generator<CostedPart> {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT || selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment =
          selection.kind === Kind.INLINE_FRAGMENT ? selection : this.fragments.get(selection.name.value)!;
        const condition = fragment.typeCondition
          ? (this.schema.getType(fragment.typeCondition.name.value) as GraphQLCompositeType)
          : type;
        yield { kind: 'fragment', selectionSet: fragment.selectionSet, condition, typed: !!fragment.typeCondition };
        continue;
      }
      if (!selection.selectionSet || !('getFields' in type)) continue;
      const field = (type.getFields() as Record<string, GraphQLField<unknown, unknown>>)[selection.name.value];
      const named = getNamedType(field.type);
      if (isLeafType(named)) continue;
      const key = selection.alias?.value ?? selection.name.value;
      if (!named.name.endsWith('Connection')) {
        yield { kind: 'object', key, selectionSet: selection.selectionSet, type: named as GraphQLCompositeType };
        continue;
      }
      const nodes = selection.selectionSet.selections.find((s) => s.kind === Kind.FIELD && s.name.value === 'nodes');
      if (!nodes || nodes.kind !== Kind.FIELD || !nodes.selectionSet) continue;
      const nodeType = getNamedType((named as GraphQLObjectType).getFields().nodes.type) as GraphQLCompositeType;
      yield { kind: 'connection', key, nodes: nodes.selectionSet, nodeType, arguments: selection.arguments ?? [] };
    }
  }

  private pageSize(args: readonly ArgumentNode[]) {
    const arg = args.find((a) => a.name.value === 'first' || a.name.value === 'last');
    if (!arg) throw new Error('you must provide one of first or last');
    const size =
      arg.value.kind === Kind.INT
        ? Number(arg.value.value)
        : arg.value.kind === Kind.VARIABLE
          ? Number(this.variables[arg.value.name.value] ?? 0)
          : 0;
    if (size > MAX_PAGE) throw new Error(`${arg.name.value} must be at most ${MAX_PAGE}, got ${size}`);
    return size;
  }
}

// --- the shop's data ---------------------------------------------------------------------------

let nextId = 2n ** 53n + 1n;
/** Ids above 2^53, as Shopify's can be: a client that parses them as JS numbers gets them wrong. */
function newId(type: string) {
  const legacy = (nextId++).toString();
  return { id: `gid://shopify/${type}/${legacy}`, legacyResourceId: legacy };
}

const round = (amount: number) => Math.round(amount * 100) / 100;
const decimal = (amount: number) => round(amount).toFixed(2);

export interface LineSpec {
  title: string;
  sku?: string | null;
  price: number;
  quantity: number;
  taxRate?: number;
  giftCard?: boolean;
  duty?: number;
}

export interface OrderSpec {
  lines: LineSpec[];
  shipping?: number;
  currency?: string;
  /** Presentment currency and its rate from shop money; defaults to the shop currency. */
  presentment?: { currency: string; rate: number };
  synced?: boolean;
  tags?: string[];
}

export interface RefundSpec {
  /** Line indexes of the order and quantities to refund. */
  lines?: { line: number; quantity: number; restockType?: 'RETURN' | 'NO_RESTOCK' | 'CANCEL' }[];
  shipping?: boolean;
  duties?: boolean;
  /** No money moves (e.g. a cancellation refunded nothing): no transactions. */
  zeroMoney?: boolean;
  note?: string | null;
  return?: Obj;
}

export interface ReturnSpec {
  lines: { line: number; quantity: number; reason?: string }[];
  exchange?: { title: string; price: number }[];
  shippingFee?: number;
  disposition?: 'RESTOCKED' | 'NOT_RESTOCKED' | 'MISSING';
}

/** The arguments of `orders`. */
interface OrderSearch {
  first?: number;
  last?: number;
  after?: string;
  query?: string;
  sortKey?: string;
  reverse?: boolean;
}

/** An in-memory shop: orders with line items, transactions, refunds, returns, metafields and tags. */
export class Shop {
  readonly domain = 'tributary-test.myshopify.com';
  readonly orders = new Map<string, Obj>();
  readonly refunds = new Map<string, Obj>();
  readonly returns = new Map<string, Obj>();
  readonly webhookSubscriptions: Obj[] = [];
  private readonly location = { __typename: 'Location', ...newId('Location') };

  createOrder(spec: OrderSpec): Obj {
    const currency = spec.currency ?? 'USD';
    const presentment = spec.presentment ?? { currency, rate: 1 };
    const money = (amount: number) => ({
      shopMoney: { amount: decimal(amount), currencyCode: currency },
      presentmentMoney: { amount: decimal(amount * presentment.rate), currencyCode: presentment.currency },
    });
    const now = shopifyTime();
    const order: Obj = {
      __typename: 'Order',
      ...newId('Order'),
      name: `#${1000 + this.orders.size + 1}`,
      createdAt: now,
      updatedAt: now,
      processedAt: now,
      currencyCode: currency,
      money,
      app: { __typename: 'OrderApp', id: 'gid://shopify/App/580111', name: 'Online Store' },
      customAttributes: spec.synced ? [{ key: 'orderSynced', value: 'TRUE' }] : [],
      tags: [...(spec.tags ?? [])],
      metafieldList: [] as Obj[],
      refunds: [] as Obj[],
      returns: [] as Obj[],
      transactions: [] as Obj[],
    };
    order.metafield = ({ namespace, key }: { namespace?: string; key: string }) =>
      order.metafieldList.find((m: Obj) => m.key === key && m.namespace === (namespace ?? '$app')) ?? null;
    order.lineItems = spec.lines.map((line) => this.lineItem(line, money));
    order.fulfillmentLineItems = order.lineItems.map((lineItem: Obj) => ({
      __typename: 'FulfillmentLineItem',
      ...newId('FulfillmentLineItem'),
      lineItem,
      quantity: lineItem.quantity,
      originalTotalSet: lineItem.originalTotalSet,
      discountedTotalSet: lineItem.discountedTotalSet,
    }));
    order.shippingLine =
      spec.shipping !== undefined
        ? {
            __typename: 'ShippingLine',
            ...newId('ShippingLine'),
            title: 'Standard',
            code: 'STANDARD',
            price: spec.shipping,
            taxRate: 0.1,
          }
        : null;
    const total =
      order.lineItems.reduce(
        (sum: number, item: Obj) =>
          sum + item.price * item.quantity * (1 + item.taxRate) + (item.duty ?? 0) * item.quantity,
        0,
      ) +
      (spec.shipping ?? 0) * 1.1;
    order.transactions.push(this.transaction(order, 'SALE', total, null));
    order.totalPriceSet = money(total);
    order.displayFinancialStatus = 'PAID';
    this.orders.set(order.id, order);
    return order;
  }

  /** Marks the order as synced to the ERP (the attribute the refund operation waits for). */
  markSynced(orderId: string) {
    const order = this.orders.get(orderId)!;
    order.customAttributes = [...order.customAttributes, { key: 'orderSynced', value: 'TRUE' }];
    this.touch(order);
  }

  createReturn(orderId: string, spec: ReturnSpec): Obj {
    const order = this.orders.get(orderId)!;
    const returnLineItems = spec.lines.map(({ line, quantity, reason }) => ({
      __typename: 'ReturnLineItem',
      ...newId('ReturnLineItem'),
      quantity,
      customerNote: null,
      refundableQuantity: quantity,
      refundedQuantity: 0,
      returnReason: reason ?? 'UNKNOWN',
      returnReasonNote: '',
      restockingFee: null,
      fulfillmentLineItem: order.fulfillmentLineItems[line],
    }));
    const disposition = spec.disposition ?? 'RESTOCKED';
    const reverseFulfillmentOrder: Obj = {
      __typename: 'ReverseFulfillmentOrder',
      ...newId('ReverseFulfillmentOrder'),
      status: 'CLOSED',
      order,
      thirdPartyConfirmation: null,
      lineItems: returnLineItems.map((item) => ({
        __typename: 'ReverseFulfillmentOrderLineItem',
        ...newId('ReverseFulfillmentOrderLineItem'),
        totalQuantity: item.quantity,
        fulfillmentLineItem: item.fulfillmentLineItem,
        dispositions: [
          {
            __typename: 'ReverseFulfillmentOrderDisposition',
            ...newId('ReverseFulfillmentOrderDisposition'),
            createdAt: new Date().toISOString(),
            location: this.location,
            quantity: item.quantity,
            type: disposition,
          },
        ],
      })),
    };
    reverseFulfillmentOrder.reverseDeliveries = [
      {
        __typename: 'ReverseDelivery',
        ...newId('ReverseDelivery'),
        reverseFulfillmentOrder,
        deliverable: {
          __typename: 'ReverseDeliveryShippingDeliverable',
          tracking: { number: '1Z999AA10123456784', carrierName: 'UPS', url: null },
          label: null,
        },
      },
    ];
    const exchangeLineItems = (spec.exchange ?? []).map((exchange) => {
      const lineItem = this.lineItem({ title: exchange.title, price: exchange.price, quantity: 1 }, order.money);
      return {
        __typename: 'ExchangeLineItem',
        ...newId('ExchangeLineItem'),
        quantity: 1,
        processableQuantity: 0,
        processedQuantity: 1,
        unprocessedQuantity: 0,
        variantId: lineItem.variant.id,
        lineItems: [lineItem],
      };
    });
    const ret: Obj = {
      __typename: 'Return',
      ...newId('Return'),
      name: `${order.name}-R${order.returns.length + 1}`,
      status: 'CLOSED',
      order,
      createdAt: new Date().toISOString(),
      totalQuantity: spec.lines.reduce((sum, line) => sum + line.quantity, 0),
      decline: null,
      returnLineItems,
      exchangeLineItems,
      reverseFulfillmentOrders: [reverseFulfillmentOrder],
      returnShippingFees: spec.shippingFee
        ? [{ __typename: 'ReturnShippingFee', ...newId('ReturnShippingFee'), amountSet: order.money(spec.shippingFee) }]
        : [],
      refunds: [] as Obj[],
    };
    order.returns.push(ret);
    this.returns.set(ret.id, ret);
    this.touch(order);
    return ret;
  }

  /**
   * Creates the refund (and its transaction) and returns it with the `refunds/create` webhook body Shopify would
   * send.
   */
  createRefund(orderId: string, spec: RefundSpec): { refund: Obj; webhookBody: string } {
    const order = this.orders.get(orderId)!;
    const now = shopifyTime();
    const refundLineItems = (spec.lines ?? []).map(({ line, quantity, restockType }) => {
      const lineItem = order.lineItems[line];
      const subtotal = lineItem.price * quantity;
      return {
        __typename: 'RefundLineItem',
        ...newId('RefundLineItem'),
        lineItem,
        quantity,
        restockType: restockType ?? 'RETURN',
        restocked: (restockType ?? 'RETURN') !== 'NO_RESTOCK',
        location: this.location,
        priceSet: order.money(lineItem.price),
        subtotalSet: order.money(subtotal),
        totalTaxSet: order.money(subtotal * lineItem.taxRate),
        subtotal,
        totalTax: round(subtotal * lineItem.taxRate),
      };
    });
    const shipping =
      spec.shipping && order.shippingLine
        ? [
            {
              __typename: 'RefundShippingLine',
              ...newId('RefundShippingLine'),
              shippingLine: order.shippingLine,
              subtotalAmountSet: order.money(order.shippingLine.price),
              taxAmountSet: order.money(order.shippingLine.price * 0.1),
            },
          ]
        : [];
    const duties = spec.duties
      ? order.lineItems
          .filter((item: Obj) => item.duty)
          .map((item: Obj) => ({
            __typename: 'RefundDuty',
            amountSet: order.money(item.duty * item.quantity),
            originalDuty: item.duties[0],
          }))
      : [];
    const amount = spec.zeroMoney
      ? 0
      : refundLineItems.reduce((sum: number, item: Obj) => sum + item.subtotal + item.totalTax, 0) +
        (shipping.length > 0 ? order.shippingLine.price * 1.1 : 0) +
        duties.reduce((sum: number, duty: Obj) => sum + Number(duty.amountSet.shopMoney.amount), 0);
    const refund: Obj = {
      __typename: 'Refund',
      ...newId('Refund'),
      createdAt: now,
      updatedAt: now,
      note: spec.note ?? null,
      order,
      return: spec.return ?? null,
      totalRefundedSet: order.money(amount),
      duties,
      refundLineItems,
      refundShippingLines: shipping,
      orderAdjustments: [],
      transactions: amount > 0 ? [this.transaction(order, 'REFUND', amount, order.transactions[0])] : [],
    };
    order.transactions.push(...refund.transactions);
    if (spec.return) spec.return.refunds.push(refund);
    order.refunds.push(refund);
    this.refunds.set(refund.id, refund);
    this.touch(order);
    return { refund, webhookBody: restRefund(refund) };
  }

  /** Sets an order's updatedAt (as if it changed then). */
  setUpdatedAt(orderId: string, at: string) {
    this.orders.get(orderId)!.updatedAt = at;
  }

  queryRoot(): Obj {
    return {
      orders: (args: OrderSearch) => this.searchOrders(args),
      ordersCount: ({ query, limit }: { query?: string; limit?: number | null }) => {
        const count = this.matchingOrders(query).length;
        return limit != null && count > limit ? { count: limit, precision: 'AT_LEAST' } : { count, precision: 'EXACT' };
      },
      refund: ({ id }: { id: string }) => this.refunds.get(id) ?? null,
      order: ({ id }: { id: string }) => this.orders.get(id) ?? null,
      return: ({ id }: { id: string }) => this.returns.get(id) ?? null,
      node: ({ id }: { id: string }) => this.refunds.get(id) ?? this.orders.get(id) ?? this.returns.get(id) ?? null,
    };
  }

  mutations(version: string): Obj {
    return {
      metafieldsSet: ({ metafields }: { metafields: Obj[] }) => this.metafieldsSet(metafields),
      tagsAdd: ({ id, tags }: { id: string; tags: string[] }) =>
        this.retag(id, (order) => [...order.tags, ...tags.filter((tag) => !order.tags.includes(tag))]),
      tagsRemove: ({ id, tags }: { id: string; tags: string[] }) =>
        this.retag(id, (order) => order.tags.filter((tag: string) => !tags.includes(tag))),
      webhookSubscriptionCreate: ({ topic, webhookSubscription }: { topic: string; webhookSubscription: Obj }) => {
        const uri = webhookSubscription.uri ?? webhookSubscription.callbackUrl;
        if (!uri || !/^https:\/\//.test(uri)) {
          // Shopify has delivered only to HTTPS addresses since 2019.
          const protocol = /^[a-z]+:\/\//i.exec(uri ?? '')?.[0];
          return {
            webhookSubscription: null,
            userErrors: [
              {
                field: ['webhookSubscription', 'uri'],
                message: protocol ? `Address protocol ${protocol} is not supported` : 'Address is invalid',
              },
            ],
          };
        }
        const subscription = {
          __typename: 'WebhookSubscription',
          ...newId('WebhookSubscription'),
          topic,
          uri,
          callbackUrl: uri,
          format: webhookSubscription.format ?? 'JSON',
          apiVersion: { handle: version, displayName: version, supported: true },
          createdAt: new Date().toISOString(),
          updatedAt: new Date().toISOString(),
        };
        this.webhookSubscriptions.push(subscription);
        return { webhookSubscription: subscription, userErrors: [] };
      },
    };
  }

  /**
   * The orders a search string (`query:` of orders and ordersCount) finds: the terms `updated_at` and
   * `created_at` (with >, >=, <, <=, quoted dates) and `tag:`, joined by AND; other terms match everything.
   */
  private matchingOrders(query: string | undefined): Obj[] {
    const terms = (query ?? '')
      .split(/\s+AND\s+/i)
      .map((term) => term.trim().replace(/^\(+|\)+$/g, ''))
      .filter(Boolean);
    const matches = (order: Obj) =>
      terms.every((term) => {
        const date = /^(updated_at|created_at):(>=|<=|>|<)?['"]?([^'"]+)['"]?$/.exec(term);
        if (date) {
          const value = Date.parse(order[date[1] === 'updated_at' ? 'updatedAt' : 'createdAt']);
          const bound = Date.parse(date[3]);
          return {
            '>=': value >= bound,
            '<=': value <= bound,
            '>': value > bound,
            '<': value < bound,
            '': value === bound,
          }[date[2] ?? ''];
        }
        const tag = /^tag:['"]?([^'"]+)['"]?$/.exec(term);
        return tag ? order.tags.includes(tag[1]) : true;
      });
    return [...this.orders.values()].filter(matches);
  }

  /**
   * `orders(query:, sortKey:)`. Cursors are keyset cursors over (sort value, id), as Shopify's are: an order
   * that changes while a client pages moves in the order instead of shifting every page.
   */
  private searchOrders(args: OrderSearch) {
    const sortValue = (order: Obj) =>
      args.sortKey === 'UPDATED_AT' ? order.updatedAt : args.sortKey === 'CREATED_AT' ? order.createdAt : '';
    const compare = (a: [string, bigint], b: [string, bigint]) =>
      a[0] !== b[0] ? Date.parse(a[0]) - Date.parse(b[0]) : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
    const keyOf = (order: Obj): [string, bigint] => [sortValue(order), BigInt(order.legacyResourceId)];
    let list = this.matchingOrders(args.query).sort((a, b) => compare(keyOf(a), keyOf(b)));
    if (args.reverse) list = list.reverse();
    const cursorOf = (order: Obj) =>
      Buffer.from(JSON.stringify([sortValue(order), order.legacyResourceId])).toString('base64url');
    if (args.after) {
      const [value, id] = JSON.parse(Buffer.from(args.after, 'base64url').toString());
      const after: [string, bigint] = [value, BigInt(id)];
      list = list.filter((order) =>
        args.reverse ? compare(keyOf(order), after) < 0 : compare(keyOf(order), after) > 0,
      );
    }
    const size = args.first ?? args.last ?? 0;
    const nodes = list.slice(0, size);
    return {
      nodes,
      edges: nodes.map((node) => ({ node, cursor: cursorOf(node) })),
      pageInfo: {
        hasNextPage: list.length > size,
        hasPreviousPage: Boolean(args.after),
        startCursor: nodes.length > 0 ? cursorOf(nodes[0]) : null,
        endCursor: nodes.length > 0 ? cursorOf(nodes[nodes.length - 1]) : null,
      },
    };
  }

  private metafieldsSet(inputs: Obj[]) {
    const userErrors: Obj[] = [];
    inputs.forEach((input, index) => {
      const order = this.orders.get(input.ownerId);
      if (!order) {
        userErrors.push({
          field: ['metafields', String(index), 'ownerId'],
          message: 'Owner does not exist',
          code: 'INVALID',
          elementIndex: index,
        });
        return;
      }
      const existing = order.metafield({ namespace: input.namespace, key: input.key });
      if (input.type === 'json') {
        try {
          JSON.parse(input.value);
        } catch {
          userErrors.push({
            field: ['metafields', String(index), 'value'],
            message: 'Value is invalid JSON',
            code: 'INVALID_VALUE',
            elementIndex: index,
          });
        }
      }
      if ('compareDigest' in input && (existing?.compareDigest ?? null) !== input.compareDigest) {
        userErrors.push({
          field: ['metafields', String(index), 'compareDigest'],
          message:
            'The resource has been updated since it was loaded. Try again with an updated `compareDigest` value.',
          code: 'STALE_OBJECT',
          elementIndex: index,
        });
      }
    });
    if (userErrors.length > 0) return { metafields: [], userErrors };
    const metafields = inputs.map((input) => {
      const order = this.orders.get(input.ownerId)!;
      let metafield = order.metafield({ namespace: input.namespace, key: input.key });
      if (!metafield) {
        metafield = {
          __typename: 'Metafield',
          ...newId('Metafield'),
          namespace: input.namespace ?? '$app',
          key: input.key,
          type: input.type ?? 'json',
          createdAt: new Date().toISOString(),
          owner: order,
        };
        order.metafieldList.push(metafield);
      }
      Object.assign(metafield, {
        value: input.value,
        jsonValue: JSON.parse(input.value),
        updatedAt: new Date().toISOString(),
      });
      metafield.compareDigest = createHash('sha256').update(`${metafield.id}\0${metafield.value}`).digest('hex');
      this.touch(order);
      return metafield;
    });
    return { metafields, userErrors: [] };
  }

  private retag(id: string, change: (order: Obj) => string[]) {
    const order = this.orders.get(id);
    if (!order) return { node: null, userErrors: [{ field: ['id'], message: 'Order does not exist' }] };
    order.tags = change(order);
    this.touch(order);
    return { node: order, userErrors: [] };
  }

  private touch(order: Obj) {
    order.updatedAt = shopifyTime();
  }

  private lineItem(spec: LineSpec, money: (amount: number) => Obj): Obj {
    const taxRate = spec.taxRate ?? 0.1;
    const total = spec.price * spec.quantity;
    const variant = newId('ProductVariant');
    const item: Obj = {
      __typename: 'LineItem',
      ...newId('LineItem'),
      price: spec.price,
      quantity: spec.quantity,
      taxRate,
      duty: spec.duty,
      requiresShipping: !spec.giftCard,
      taxable: true,
      isGiftCard: spec.giftCard ?? false,
      sku: spec.sku === undefined ? `SKU-${spec.title.toUpperCase().replace(/\W+/g, '-')}` : spec.sku,
      name: `${spec.title} - Default`,
      title: spec.title,
      variantTitle: 'Default',
      vendor: 'Tributary Goods',
      totalDiscountSet: money(0),
      discountedUnitPriceAfterAllDiscountsSet: money(spec.price),
      discountedTotalSet: money(total),
      originalTotalSet: money(total),
      originalUnitPriceSet: money(spec.price),
      discountedUnitPriceSet: money(spec.price),
      product: { __typename: 'Product', ...newId('Product') },
      variant: {
        __typename: 'ProductVariant',
        ...variant,
        selectedOptions: [{ name: 'Title', value: 'Default' }],
        barcode: null,
        price: decimal(spec.price),
        compareAtPrice: null,
      },
      taxLines: [
        {
          __typename: 'TaxLine',
          title: 'State tax',
          rate: taxRate,
          ratePercentage: taxRate * 100,
          priceSet: money(total * taxRate),
        },
      ],
      discountAllocations: [],
      customAttributes: [],
    };
    item.duties = spec.duty
      ? [
          {
            __typename: 'Duty',
            ...newId('Duty'),
            harmonizedSystemCode: '6109100010',
            countryCodeOfOrigin: 'PT',
            price: money(spec.duty * spec.quantity),
            taxLines: [],
          },
        ]
      : [];
    return item;
  }

  private transaction(order: Obj, kind: 'SALE' | 'REFUND', amount: number, parent: Obj | null): Obj {
    const now = shopifyTime();
    const { id, legacyResourceId } = newId('OrderTransaction');
    return {
      __typename: 'OrderTransaction',
      id,
      legacyResourceId,
      kind,
      status: 'SUCCESS',
      errorCode: null,
      gateway: 'shopify_payments',
      formattedGateway: 'Shopify Payments',
      accountNumber: '•••• •••• •••• 4242',
      authorizationCode: kind === 'SALE' ? '53433' : null,
      authorizationExpiresAt: null,
      createdAt: now,
      processedAt: now,
      fees:
        kind === 'SALE'
          ? [
              {
                __typename: 'TransactionFee',
                id: newId('TransactionFee').id,
                type: 'payment_fee',
                rate: '0.029',
                rateName: 'Card',
                flatFeeName: null,
                amount: { amount: decimal(amount * 0.029 + 0.3), currencyCode: order.currencyCode },
                flatFee: { amount: '0.30', currencyCode: order.currencyCode },
                taxAmount: { amount: '0.00', currencyCode: order.currencyCode },
              },
            ]
          : [],
      manuallyCapturable: false,
      multiCapturable: false,
      maximumRefundableV2: kind === 'SALE' ? { amount: decimal(amount), currencyCode: order.currencyCode } : null,
      paymentId: `c${legacyResourceId}.1`,
      settlementCurrency: null,
      settlementCurrencyRate: null,
      shopifyPaymentsSet: {
        refundSet: kind === 'REFUND' ? { acquirerReferenceNumber: '74987505186000001234567' } : null,
        extendedAuthorizationSet: null,
      },
      test: false,
      totalUnsettledSet: order.money(0),
      amountSet: order.money(amount),
      // Shopify returns receiptJson as a JSON object on some versions and as text on others.
      receiptJson:
        kind === 'SALE'
          ? { id: `ch_${legacyResourceId}`, amount: Math.round(amount * 100) }
          : JSON.stringify({ id: `re_${legacyResourceId}`, amount: Math.round(amount * 100) }),
      paymentDetails: {
        __typename: 'CardPaymentDetails',
        name: 'Test Holder',
        expirationMonth: 12,
        expirationYear: 2030,
        paymentMethodName: 'card',
        wallet: null,
        avsResultCode: 'Y',
        bin: '424242',
        cvvResultCode: 'M',
        number: '•••• •••• •••• 4242',
        company: 'Visa',
      },
      parentTransaction: parent,
      order,
    };
  }
}

/**
 * The REST Refund resource a `refunds/create` webhook carries. Ids are written as bare JSON numbers
 * above 2^53, as Shopify writes them: a consumer that reads them as JS numbers loses digits.
 */
function restRefund(refund: Obj): string {
  const big = (legacy: string) => `@@${legacy}@@`;
  const money = (set: Obj) => ({
    shop_money: { amount: set.shopMoney.amount, currency_code: set.shopMoney.currencyCode },
    presentment_money: { amount: set.presentmentMoney.amount, currency_code: set.presentmentMoney.currencyCode },
  });
  const body = {
    id: big(refund.legacyResourceId),
    admin_graphql_api_id: refund.id,
    order_id: big(refund.order.legacyResourceId),
    created_at: refund.createdAt,
    processed_at: refund.createdAt,
    note: refund.note,
    user_id: null,
    restock: refund.refundLineItems.some((item: Obj) => item.restocked),
    return: refund.return ? { id: big(refund.return.legacyResourceId), admin_graphql_api_id: refund.return.id } : null,
    duties: refund.duties.map((duty: Obj) => ({
      duty_id: big(duty.originalDuty.legacyResourceId),
      amount_set: money(duty.amountSet),
    })),
    total_duties_set: money(
      refund.order.money(
        refund.duties.reduce((sum: number, duty: Obj) => sum + Number(duty.amountSet.shopMoney.amount), 0),
      ),
    ),
    order_adjustments: [],
    refund_shipping_lines: refund.refundShippingLines.map((line: Obj) => ({
      id: big(line.legacyResourceId),
      shipping_line_id: big(line.shippingLine.legacyResourceId),
      subtotal_amount_set: money(line.subtotalAmountSet),
    })),
    refund_line_items: refund.refundLineItems.map((item: Obj) => ({
      id: big(item.legacyResourceId),
      line_item_id: big(item.lineItem.legacyResourceId),
      quantity: item.quantity,
      restock_type: item.restockType.toLowerCase(),
      subtotal: item.subtotal,
      total_tax: item.totalTax,
      subtotal_set: money(item.subtotalSet),
      total_tax_set: money(item.totalTaxSet),
    })),
    transactions: refund.transactions.map((transaction: Obj) => ({
      id: big(transaction.legacyResourceId),
      admin_graphql_api_id: transaction.id,
      order_id: big(refund.order.legacyResourceId),
      kind: 'refund',
      gateway: transaction.gateway,
      status: 'success',
      amount: transaction.amountSet.shopMoney.amount,
      currency: transaction.amountSet.shopMoney.currencyCode,
      parent_id: big(transaction.parentTransaction.legacyResourceId),
    })),
  };
  return JSON.stringify(body).replace(/"@@(\d+)@@"/g, '$1');
}
