import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import type { Keyring } from '../../engine/secrets/index.ts';
import type { Client, CredentialStore } from '../../engine/store/index.ts';

export const TOKEN_LIFETIME_SECONDS = 86_400;
const ALGORITHM = 'ES256';
const KEY_CONTEXT = 'signing-key';

/**
 * The embedded OAuth 2.0 issuer (client credentials). Its signing key lives in the store, sealed
 * with the secrets keyring, so every API process signs with the same key and publishes the same JWKS.
 */
export class TokenIssuer {
  private signingKey?: Promise<{ kid: string; key: CryptoKey | Uint8Array }>;

  constructor(
    private readonly store: CredentialStore,
    private readonly keyring: Keyring,
    /** The issuer identifier, read when used: the public URL is known once the server listens. */
    readonly issuer: () => string,
    readonly audience: string,
  ) {}

  /** A token for the client, with the scopes granted (all it holds unless fewer are given). */
  async issue(
    client: Client,
    scopes: readonly string[] = client.scopes,
  ): Promise<{ access_token: string; token_type: 'Bearer'; expires_in: number; scope: string }> {
    const { kid, key } = await this.key();
    const scope = scopes.join(' ');
    const accessToken = await new SignJWT({
      scope,
      ...(client.tenantId ? { tenant_id: client.tenantId } : {}),
      ...(client.environments ? { environments: client.environments } : {}),
      ...(client.operator ? { operator: true } : {}),
    })
      .setProtectedHeader({ alg: ALGORITHM, kid, typ: 'at+jwt' })
      .setIssuer(this.issuer())
      .setAudience(this.audience)
      .setSubject(client.clientId)
      .setIssuedAt()
      .setExpirationTime(`${TOKEN_LIFETIME_SECONDS}s`)
      .sign(key);
    return { access_token: accessToken, token_type: 'Bearer', expires_in: TOKEN_LIFETIME_SECONDS, scope };
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.key();
    return { keys: await publicSigningKeys(this.store) };
  }

  private key() {
    this.signingKey ??= this.loadOrCreate().catch((error) => {
      this.signingKey = undefined;
      throw error;
    });
    return this.signingKey;
  }

  private async loadOrCreate() {
    let [stored] = await this.store.listSigningKeys();
    if (!stored) {
      const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true });
      const kid = `k${Date.now().toString(36)}`;
      await this.store.addSigningKey({
        kid,
        sealedPrivateJwk: this.keyring.seal(JSON.stringify(await exportJWK(privateKey)), KEY_CONTEXT),
        publicJwk: { ...(await exportJWK(publicKey)) } as Record<string, unknown>,
      });
      // Another process may have created one at the same time: all use the newest stored.
      [stored] = await this.store.listSigningKeys();
    }
    const jwk = JSON.parse(this.keyring.open(stored.sealedPrivateJwk, KEY_CONTEXT)) as JWK;
    return { kid: stored.kid, key: await importJWK(jwk, ALGORITHM) };
  }
}

/** The embedded issuer's public keys, as a JWKS lists them. */
export async function publicSigningKeys(store: CredentialStore): Promise<JWK[]> {
  const keys = await store.listSigningKeys();
  return keys.map((key) => ({ ...key.publicJwk, kid: key.kid, alg: ALGORITHM, use: 'sig' }) as JWK);
}
