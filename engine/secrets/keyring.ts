import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * AES-256-GCM under named keys. Each ciphertext records the id of the key that sealed it, so keys
 * rotate: put the new key first (it seals), keep the old ones after it (they still open).
 * The additional data binds a ciphertext to its owner and name: a value copied to another tenant
 * or another secret does not open.
 */
export class Keyring {
  private readonly keys: Map<string, Buffer>;
  readonly currentKeyId: string;

  constructor(keys: Array<{ id: string; key: Buffer }>) {
    if (keys.length === 0) throw new Error('the keyring needs at least one key');
    for (const { id, key } of keys) {
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(id))
        throw new Error(`secret key id "${id}" must be 1-32 letters, digits, _ or -`);
      if (key.length !== 32) throw new Error(`secret key "${id}" must be 32 bytes (AES-256), got ${key.length}`);
    }
    this.keys = new Map(keys.map(({ id, key }) => [id, key]));
    this.currentKeyId = keys[0].id;
  }

  /** Parse `SECRETS_KEY`: `id:base64key[,id:base64key...]`, the first one sealing new values. */
  static parse(text: string): Keyring {
    return new Keyring(
      text
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean)
        .map((entry) => {
          const separator = entry.indexOf(':');
          if (separator < 1) throw new Error('SECRETS_KEY entries look like <key id>:<base64 of 32 bytes>');
          return { id: entry.slice(0, separator), key: Buffer.from(entry.slice(separator + 1), 'base64') };
        }),
    );
  }

  static generateEntry(id = `k${Date.now().toString(36)}`): string {
    return `${id}:${randomBytes(32).toString('base64')}`;
  }

  seal(plaintext: string, context: string): SealedValue {
    const key = this.keys.get(this.currentKeyId)!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return {
      keyId: this.currentKeyId,
      ciphertext: `${iv.toString('base64url')}.${body.toString('base64url')}`,
      fingerprint: this.fingerprint(plaintext, context),
    };
  }

  open(sealed: Pick<SealedValue, 'keyId' | 'ciphertext'>, context: string): string {
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new Error(`secret sealed with key "${sealed.keyId}", which SECRETS_KEY no longer holds`);
    const [ivText, bodyText] = sealed.ciphertext.split('.');
    const body = Buffer.from(bodyText ?? '', 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(ivText ?? '', 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(body.subarray(body.length - 16));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8');
  }

  /**
   * A signature of `message` for `context` (HMAC-SHA256 under the current key), naming its key so that it
   * still verifies after a rotation while SECRETS_KEY holds that key: `<key id>.<base64url>`.
   */
  sign(message: string, context: string): string {
    return `${this.currentKeyId}.${this.mac(this.currentKeyId, message, context)}`;
  }

  /** Whether `signature` is this keyring's signature of `message` for `context`, compared in constant time. */
  verify(message: string, context: string, signature: string): boolean {
    const separator = signature.indexOf('.');
    const keyId = signature.slice(0, separator);
    if (separator < 1 || !this.keys.has(keyId)) return false;
    const expected = Buffer.from(this.mac(keyId, message, context));
    const given = Buffer.from(signature.slice(separator + 1));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(keyId: string, message: string, context: string): string {
    return createHmac('sha256', this.keys.get(keyId)!).update(`mac\0${context}\0${message}`).digest('base64url');
  }

  /** A short keyed digest: tells whether two values are equal without revealing either. */
  private fingerprint(plaintext: string, context: string): string {
    const key = this.keys.get(this.currentKeyId)!;
    return createHmac('sha256', key).update(`fingerprint\0${context}\0${plaintext}`).digest('base64url').slice(0, 16);
  }
}

/** The additional data a tenant's secret variable is sealed with: its tenant and name. */
export const secretContext = (tenantId: string, name: string) => `secret\0${tenantId}\0${name}`;

/** The additional data a destination's credentials are sealed with: its tenant and name. */
export const destinationContext = (tenantId: string, name: string) => `destination\0${tenantId}\0${name}`;

export const alertChannelContext = (tenantId: string, id: string) => `alert-channel\0${tenantId}\0${id}`;

export interface SealedValue {
  keyId: string;
  ciphertext: string;
  fingerprint: string;
}
