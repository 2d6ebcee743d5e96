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
