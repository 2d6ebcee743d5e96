import type { FieldError, FlowDocument, JsonText } from '../model/index.ts';
import type { Run, Step } from '../store/index.ts';

/**
 * HTTP routes an operation family serves beside the API, declared without a web framework: a vendor's own contract
 * (Shopify's deprecated refund adapter) and the tenant routes that go with it. The API mounts them, lists them in
 * `/openapi.json`, and answers their refusals as problems of its catalog.
 */
export type FamilyRoute = TenantRoute | PublicRoute;

/** What `/openapi.json` and `/docs` say of a route: a refusal's status (4xx, 5xx) is answered as a problem. */
interface RouteDocs {
  method: 'post';
  /** OpenAPI style: `/api/adp/{store}/...`. */
  path: string;
  /** One of the API's tags (docs/glossary.md). */
  tag: string;
  summary: string;
  description: string;
  /** By status: what it means, and the schema of a JSON answer. */
  responses: Record<number, { description: string; schema?: Record<string, unknown> }>;
}

/** A route of the tenant API: bearer token, `tenant_id` header and scope, as every `/api/v1` route. */
export interface TenantRoute extends RouteDocs {
  access: 'tenant';
  /** The scope the token needs (`destinations:write`). */
  scope: string;
  handle(call: { tenantId: string }, platform: FamilyRoutePlatform): Promise<FamilyAnswer>;
}

/** A route that authenticates its callers itself (an API key in a header), its raw body up to BODY_LIMIT. */
export interface PublicRoute extends RouteDocs {
  access: 'public';
  operationId: string;
  deprecated?: boolean;
  /** Its path parameters' and headers' schemas. */
  parameters: Array<{ name: string; in: 'path' | 'header'; required: boolean; schema: Record<string, unknown> }>;
  /** What its JSON body is. */
  body: string;
  /** Headers of every answer, refusals included (RFC 9745's Deprecation). */
  headers?: Record<string, string>;
  handle(request: FamilyRequest, platform: FamilyRoutePlatform): Promise<FamilyAnswer>;
}

export interface FamilyRequest {
  params: Record<string, string>;
  header(name: string): string | undefined;
  /** The body as it came. */
  body: Buffer;
}

/** A JSON answer. */
export interface FamilyAnswer {
  status: number;
  body: unknown;
}

/** A refusal: answered as the problem of the catalog with this status (RFC 9457), `extra`'s fields beside. */
export class RouteRefusal extends Error {
  override readonly name = 'RouteRefusal';
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; [field: string]: unknown } = {},
  ) {
    super(detail);
  }
}

/** A delivery to one of the tenant's flows, as its flow URL would take it: the same checks and refusals. */
export interface FamilyDelivery {
  tenantId: string;
  flowKey: string;
  rawBody: Buffer;
  /** The body once checked (`checkedJson`). */
  body: JsonText;
  /** The headers the run sees. */
  headers: Record<string, string>;
  /** Headers only the platform sets (a run reads them; a sender cannot forge them). */
  ownHeaders: Record<string, string>;
}

/** What the platform does for a family's routes. */
export interface FamilyRoutePlatform {
  /** This deployment's address of `path`. */
  url(path: string): string;
  /** Whether `candidate` is the tenant's secret variable `name`, compared in constant time. */
  secretMatches(tenantId: string, name: string, candidate: string): Promise<boolean>;
  putSecret(tenantId: string, name: string, value: string): Promise<void>;
  /** The tenant's flow of the document's key, installed and published from the document if it has none. */
  installedFlow(tenantId: string, document: FlowDocument): Promise<{ id: string }>;
  /** Creates or replaces a destination; a ValidationError names its fields from `$`. */
  putDestination(tenantId: string, name: string, body: Record<string, unknown> & { type: string }): Promise<void>;
  /** A JSON body checked as a flow URL checks it (media type, size, depth, NUL, lone surrogates), not parsed. */
  checkedJson(body: Buffer, contentType: string | undefined): Promise<JsonText>;
  /**
   * Stores the message and queues its run (a duplicate's ids if it was delivered before); undefined if the tenant has
   * no active flow of that key. Refused as a flow URL refuses (maintenance, throttled, invalid) with nothing stored.
   */
  deliver(delivery: FamilyDelivery): Promise<{ messageId: string; runId: string } | undefined>;
  /** The run once it has finished, or as it is after the route's wait (ADAPTER_WAIT_MS). */
  finishedRun(tenantId: string, runId: string): Promise<{ run: Run; steps: Step[] } | undefined>;
}
