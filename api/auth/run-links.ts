import type { Keyring } from '../../engine/secrets/index.ts';

/** Where a run's page is served: `<RUN_PAGES_PATH>/<token>`. */
export const RUN_PAGES_PATH = '/run-pages';

/** How long a link the API hands a tenant opens its run's page, unless it asks for less (or more, up to a day). */
export const DEFAULT_LINK_SECONDS = 900;
export const MAX_LINK_SECONDS = 86_400;

const LINK_CONTEXT = 'run-page';

export interface RunPageGrant {
  tenantId: string;
  runId: string;
  /** Seconds since the epoch. */
  expiresAt: number;
  /** The page may replay the run's message (the link was made by a client that may). */
  canReplay: boolean;
}

/**
 * Signed links to one run's page: `<payload>.<signature>`, the payload naming the tenant, run, expiry and
 * what the page may do, signed with the keyring (so every API process verifies what another made).
 */
export class RunPageLinks {
  constructor(private readonly keyring: Keyring) {}

  token(grant: RunPageGrant): string {
    const payload = Buffer.from(
      JSON.stringify([grant.tenantId, grant.runId, grant.expiresAt, grant.canReplay ? 1 : 0]),
    ).toString('base64url');
    return `${payload}.${this.keyring.sign(payload, LINK_CONTEXT)}`;
  }

  /** The grant a token carries; `expired` past its time; undefined when it is not one this platform signed. */
  read(token: string, now = Date.now()): RunPageGrant | 'expired' | undefined {
    const separator = token.indexOf('.');
    const payload = token.slice(0, separator);
    if (separator < 1 || token.length > 1000 || !this.keyring.verify(payload, LINK_CONTEXT, token.slice(separator + 1)))
      return undefined;
    const [tenantId, runId, expiresAt, canReplay] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (expiresAt * 1000 <= now) return 'expired';
    return { tenantId, runId, expiresAt, canReplay: canReplay === 1 };
  }
}
