/**
 * A bearer token for a client of the API (OAuth 2.0 client credentials, audience tributary-api), from the server at
 * `url`; a refusal throws, saying what the server answered.
 */
export async function clientToken(url: string, clientId: string, clientSecret: string): Promise<string> {
  const response = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
      audience: 'tributary-api',
    }),
  }).catch((error: Error & { cause?: { code?: string } }) => {
    throw new Error(`could not reach ${url} (${error.cause?.code ?? error.message}): is Tributary running there?`);
  });
  if (!response.ok)
    throw new Error(`${url} refused the client credentials (${response.status}): ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Where the tenant's API is, and the client credentials it is called with. */
export interface TenantApiOptions {
  /** The API's base URL, e.g. http://localhost:3000. */
  url: string;
  tenant: string;
  /** The tenant's environment (production when absent). */
  env?: string;
  clientId: string;
  clientSecret: string;
}

/** A call of the tenant's API: the answer's body. */
export type TenantApi = (method: string, route: string, body?: unknown) => Promise<Record<string, unknown>>;

/**
 * Calls the tenant's API with a token from its client credentials: the answer's body, a problem naming fields
 * included (its `errors` say what to fix); any other failure throws, saying what answered.
 */
export async function tenantApi({ url, tenant, env, clientId, clientSecret }: TenantApiOptions): Promise<TenantApi> {
  const accessToken = await clientToken(url, clientId, clientSecret);
  const headers = {
    authorization: `Bearer ${accessToken}`,
    tenant_id: tenant,
    ...(env ? { environment: env } : {}),
    'content-type': 'application/json',
  };
  return async (method, route, body) => {
    const answer = await fetch(`${url}${route}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await answer.text();
    const parsed = text ? JSON.parse(text) : {};
    if (answer.ok || ((answer.status === 400 || answer.status === 409) && problemsOf(parsed))) return parsed;
    throw new Error(`${method} ${route} answered ${answer.status}: ${parsed.detail ?? text}`);
  };
}

/** A refusal's problems, by field (`errors` of a problem answer); undefined for any other answer. */
export function problemsOf(answer: Record<string, unknown>): Array<{ path: string; message: string }> | undefined {
  return Array.isArray(answer.errors) ? (answer.errors as Array<{ path: string; message: string }>) : undefined;
}
