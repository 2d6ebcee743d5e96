/**
 * The kinds of problem the API answers, each with a stable `type` a client branches on (RFC 9457): the URI of its
 * entry in the API reference (`/docs`), relative to the server. A kind is never renamed; new kinds may be added.
 */
export const problemTypes = {
  'invalid-request': {
    status: 400,
    summary:
      'The request is not valid (its path, query, headers or body): `errors` lists each bad field with its path. ' +
      'Fix the request; sending it again as it is fails the same way.',
  },
  unauthorized: {
    status: 401,
    summary: 'No credentials, or invalid or expired ones (a bearer token, an operator sign-in, a signature).',
  },
  forbidden: { status: 403, summary: "The credentials are valid but do not grant this tenant or this route's scope." },
  'not-found': {
    status: 404,
    summary:
      'What the path names does not exist for this tenant, or ids the body names are not of this tenant ' +
      '(`errors` gives the path of each).',
  },
  conflict: {
    status: 409,
    summary: 'The request conflicts with the current state (a stale `revision`, a limit on work running at once).',
  },
  'limit-reached': {
    status: 409,
    summary: 'Storing this would take the tenant past a limit on what it keeps: `limit` names the kind.',
  },
  'too-large': { status: 413, summary: 'The body is over the size limit (`BODY_LIMIT`).' },
  'unsupported-media-type': { status: 415, summary: 'The body is not in a media type or encoding this route takes.' },
  'rate-limited': { status: 429, summary: 'Too many requests or deliveries: retry after `Retry-After` seconds.' },
  internal: {
    status: 500,
    summary: 'A fault of the platform: the request id (`x-request-id`) identifies it in the logs.',
  },
  'bad-gateway': {
    status: 502,
    summary: 'An outside system called on the request’s behalf refused it; `detail` says why.',
  },
  unavailable: {
    status: 503,
    summary: 'Nothing was done: the store, Redis or an outside system did not answer in time. Retry later.',
  },
  maintenance: { status: 503, summary: 'The platform is in maintenance: nothing was done. Retry after `Retry-After`.' },
} as const;

export type ProblemKind = keyof typeof problemTypes;

export const problemTypeUri = (kind: ProblemKind) => `/docs#problem-${kind}`;

const kinds = Object.keys(problemTypes) as ProblemKind[];

/** A status's usual kind: the first of the catalog with that status; a client error otherwise is invalid. */
export function kindOfStatus(status: number): ProblemKind {
  return kinds.find((kind) => problemTypes[kind].status === status) ?? (status < 500 ? 'invalid-request' : 'internal');
}

/** Each kind with its URI, as `/docs` and `/openapi.json` list them. */
export const problemCatalog = kinds.map((kind) => ({ kind, uri: problemTypeUri(kind), ...problemTypes[kind] }));
