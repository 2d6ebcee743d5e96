/**
 * Who calls: the embedded OAuth 2.0 issuer, token verification and scopes, clients, sessions, signed run-page
 * links, rate limits on calls and sign-ins.
 */
export { ClientAuthenticator, type ClientCredentials, createClientCredentials } from './clients.ts';
export { DashboardSessions } from './dashboard-session.ts';
export { publicSigningKeys, TokenIssuer } from './issuer.ts';
export { isOperatorAuthorization, operatorGuard } from './operator-guard.ts';
export { ApiCallLimit, SignInThrottle } from './rate-limits.ts';
export {
  DEFAULT_LINK_SECONDS,
  MAX_LINK_SECONDS,
  RUN_PAGES_PATH,
  type RunPageGrant,
  RunPageLinks,
} from './run-links.ts';
export { allTenantScopes, operatorScope, type Scope, tenantScopes } from './scopes.ts';
export { tokenRoutes } from './token.ts';
export { authorize, type Principal, TokenVerifier } from './verifier.ts';
