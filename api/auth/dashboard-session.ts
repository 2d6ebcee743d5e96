import type { Response } from 'express';
import type { Keyring } from '../../engine/secrets/index.ts';
import type { CredentialStore } from '../../engine/store/index.ts';

/** The cookie the dashboard's sign-in sets: a dashboard session, never an API token. */
export const SESSION_COOKIE = 'tributary_session';
/** The cookie goes only to the operator pages, never to cross-site requests (bull-board's buttons change queues). */
const COOKIE_PATH = '/admin';
const SESSION_CONTEXT = 'dashboard-session';

/** A session lasts an hour after its last renewal, renewed while it is used, for at most 12 hours after sign-in. */
export const SESSION_SECONDS = 3600;
export const SESSION_MAX_SECONDS = 12 * 3600;

interface Session {
  clientId: string;
  /** Seconds since the epoch. */
  signedInAt: number;
  expiresAt: number;
}

/**
 * Dashboard sessions: `<payload>.<signature>` signed with the keyring (any API process checks what another made),
 * naming the operator client, when it signed in and until when. It opens the operator pages only: the API takes
 * bearer tokens, so a stolen cookie calls no route. Each use checks the client is still an operator, so deleting
 * the client ends its sessions at once.
 */
export class DashboardSessions {
  constructor(
    private readonly keyring: Keyring,
    private readonly store: CredentialStore,
    private readonly publicUrl: () => string,
  ) {}

  /** Sign in: set a new session's cookie. */
  start(res: Response, clientId: string, now = Date.now()) {
    const signedInAt = Math.floor(now / 1000);
    this.setCookie(res, { clientId, signedInAt, expiresAt: signedInAt + SESSION_SECONDS });
  }

  end(res: Response) {
    res.clearCookie(SESSION_COOKIE, { path: COOKIE_PATH });
  }

  /**
   * Whether the request's cookies hold a live session of an operator client; when half of its hour is gone, the
   * cookie is renewed on `res` (up to SESSION_MAX_SECONDS after sign-in).
   */
  async check(cookieHeader: string | undefined, res: Response, now = Date.now()): Promise<boolean> {
    const session = this.read(cookieValue(cookieHeader, SESSION_COOKIE));
    const seconds = now / 1000;
    if (!session || session.expiresAt <= seconds) return false;
    if ((await this.store.getClient(session.clientId))?.operator !== true) return false;
    const latest = session.signedInAt + SESSION_MAX_SECONDS;
    if (session.expiresAt - seconds < SESSION_SECONDS / 2 && session.expiresAt < latest)
      this.setCookie(res, { ...session, expiresAt: Math.min(latest, Math.floor(seconds) + SESSION_SECONDS) });
    return true;
  }

  private setCookie(res: Response, session: Session) {
    const payload = Buffer.from(JSON.stringify([session.clientId, session.signedInAt, session.expiresAt])).toString(
      'base64url',
    );
    res.cookie(SESSION_COOKIE, `${payload}.${this.keyring.sign(payload, SESSION_CONTEXT)}`, {
      httpOnly: true,
      sameSite: 'strict',
      // A proxy in front terminates TLS, so the request itself says nothing: PUBLIC_URL does.
      secure: this.publicUrl().startsWith('https:'),
      path: COOKIE_PATH,
      maxAge: (session.expiresAt - Math.floor(Date.now() / 1000)) * 1000,
    });
  }

  private read(value: string | undefined): Session | undefined {
    const separator = value?.indexOf('.') ?? -1;
    if (!value || separator < 1 || value.length > 1000) return undefined;
    const payload = value.slice(0, separator);
    if (!this.keyring.verify(payload, SESSION_CONTEXT, value.slice(separator + 1))) return undefined;
    const [clientId, signedInAt, expiresAt] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return { clientId, signedInAt, expiresAt };
  }
}

/** A cookie's value in a Cookie header, if it is there. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of header?.split(';') ?? []) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim();
  }
  return undefined;
}
