import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type Responses = Record<string, { content?: Record<string, { schema?: object }> }>;
type RequestBody = { content?: Record<string, { schema?: object; example?: unknown }> };
type OpenApi = { paths: Record<string, Record<string, { responses?: Responses; requestBody?: RequestBody }>> };

/**
 * What the server's own `/openapi.json` promises about its answers, checked against every answer a
 * test receives through ApiClient: the status must be documented for the route, and a JSON body must
 * match the documented schema. A test that reaches a route therefore also tests its reference.
 */
export class OpenApiContract {
  private readonly ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
  private readonly routes: Array<{ pattern: RegExp; template: string }>;
  private readonly validators = new Map<string, ValidateFunction | null>();

  private constructor(private readonly document: OpenApi) {
    this.ajv.addSchema(document as object, 'openapi.json');
    // Templates with fewer parameters first, so /flows/{id}/versions wins over a looser match.
    this.routes = Object.keys(document.paths)
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      }));
  }

  private static readonly loaded = new Map<string, Promise<OpenApiContract>>();

  /** The contract a running server publishes (fetched once per server). */
  static of(baseUrl: string): Promise<OpenApiContract> {
    let contract = OpenApiContract.loaded.get(baseUrl);
    if (!contract) {
      contract = fetch(`${baseUrl}/openapi.json`).then(
        async (response) => new OpenApiContract((await response.json()) as OpenApi),
      );
      OpenApiContract.loaded.set(baseUrl, contract);
    }
    return contract;
  }

  /** Why this answer breaks the contract; empty when it keeps it. */
  violations(method: string, url: string, status: number, body: unknown): string[] {
    const path = new URL(url, 'http://x').pathname;
    const route = this.routes.find(({ pattern }) => pattern.test(path));
    const verb = method.toLowerCase();
    const operation = route && this.document.paths[route.template][verb];
    if (!route || !operation) return [`${method} ${path} is not in /openapi.json`];
    const declared = operation.responses?.[String(status)];
    if (!declared) {
      const listed = Object.keys(operation.responses ?? {}).join(', ');
      return [`${method} ${route.template} answered ${status}, which /openapi.json does not list (${listed})`];
    }
    const mediaType = Object.keys(declared.content ?? {})[0];
    if (!mediaType || body === undefined) return [];
    const validate = this.validator(`${route.template} ${verb} ${status} ${mediaType}`, [
      'paths',
      route.template,
      verb,
      'responses',
      String(status),
      'content',
      mediaType,
      'schema',
    ]);
    if (!validate || validate(body)) return [];
    return (validate.errors ?? []).map(
      ({ instancePath, message, params }) =>
        `${method} ${route.template} ${status}: ${instancePath || '(body)'} ${message} ${JSON.stringify(params)}`,
    );
  }

  /** Each request body's example that is missing or breaks its own schema, and how many bodies there are. */
  requestExamples(): { bodies: number; violations: string[] } {
    let bodies = 0;
    const violations: string[] = [];
    for (const [template, methods] of Object.entries(this.document.paths))
      for (const [verb, operation] of Object.entries(methods))
        for (const [mediaType, media] of Object.entries(operation.requestBody?.content ?? {})) {
          bodies++;
          const where = `${verb.toUpperCase()} ${template} (${mediaType})`;
          if (media.example === undefined) {
            violations.push(`${where}: no example`);
            continue;
          }
          const pointer = ['paths', template, verb, 'requestBody', 'content', mediaType, 'schema'];
          const validate = this.validator(`${template} ${verb} request ${mediaType}`, pointer);
          if (validate && !validate(media.example))
            violations.push(`${where}: ${this.ajv.errorsText(validate.errors)}`);
        }
    return { bodies, violations };
  }

  private validator(key: string, pointer: string[]): ValidateFunction | null {
    if (!this.validators.has(key)) {
      const escaped = pointer.map((segment) => encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1')));
      this.validators.set(key, this.ajv.compile({ $ref: `openapi.json#/${escaped.join('/')}` }));
    }
    return this.validators.get(key)!;
  }
}
