import { createHmac, randomBytes } from 'node:crypto';

/** Token-based authentication (OAuth 1.0a, HMAC-SHA256), as NetSuite TBA requires it. */
export interface OAuth1Credentials {
  consumerKey: string;
  consumerSecret: string;
  token: string;
  tokenSecret: string;
  /** Sent in the header, not signed (NetSuite: the account id, upper case). */
  realm?: string;
}

/** RFC 3986 percent-encoding, stricter than encodeURIComponent (which leaves !'()* alone). */
export const percentEncode = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The Authorization header for one request. The base string covers the method, the URL without
 * its query (scheme and host lower case, default port dropped), and every oauth_ and query
 * parameter; a JSON body is not part of it. Each call needs a fresh nonce and timestamp.
 */
export function oauth1Header(
  method: string,
  url: string,
  credentials: OAuth1Credentials,
  nonce = randomBytes(15).toString('base64url'),
  timestamp = Math.floor(Date.now() / 1000).toString(),
): string {
  const parsed = new URL(url);
  const oauth: Record<string, string> = {
    oauth_consumer_key: credentials.consumerKey,
    oauth_nonce: nonce,
    oauth_signature_method: 'HMAC-SHA256',
    oauth_timestamp: timestamp,
    oauth_token: credentials.token,
    oauth_version: '1.0',
  };
  const params = [...Object.entries(oauth), ...parsed.searchParams.entries()]
    .map(([key, value]) => [percentEncode(key), percentEncode(value)])
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  // WHATWG URL parsing already lower-cases scheme and host and drops a default port; the path keeps its case.
  const base = [
    method.toUpperCase(),
    percentEncode(`${parsed.protocol}//${parsed.host}${parsed.pathname}`),
    percentEncode(params),
  ].join('&');
  const key = `${percentEncode(credentials.consumerSecret)}&${percentEncode(credentials.tokenSecret)}`;
  const signature = createHmac('sha256', key).update(base).digest('base64');
  const fields = [
    ...(credentials.realm !== undefined ? [`realm="${percentEncode(credentials.realm)}"`] : []),
    ...Object.entries({ ...oauth, oauth_signature: signature }).map(
      ([name, value]) => `${name}="${percentEncode(value)}"`,
    ),
  ];
  return `OAuth ${fields.join(', ')}`;
}
