import { describe, expect, it } from 'vitest';
import { Keyring } from '../engine/secrets/keyring.ts';

describe('Keyring (AES-256-GCM with key ids)', () => {
  const old = Keyring.generateEntry('old');
  const next = Keyring.generateEntry('new');

  it('seals without revealing the value and opens it again', () => {
    const keyring = Keyring.parse(old);
    const sealed = keyring.seal('hunter2-secret', 'acme/API_KEY');
    expect(sealed.keyId).toBe('old');
    expect(sealed.ciphertext).not.toContain('hunter2');
    expect(keyring.open(sealed, 'acme/API_KEY')).toBe('hunter2-secret');
  });

  it('rotates: the new key seals, the old one still opens', () => {
    const before = Keyring.parse(old).seal('value', 'ctx');
    const rotated = Keyring.parse(`${next},${old}`);
    expect(rotated.open(before, 'ctx')).toBe('value');
    expect(rotated.seal('value', 'ctx').keyId).toBe('new');
  });

  it('refuses a value moved to another owner or name, or tampered with', () => {
    const keyring = Keyring.parse(old);
    const sealed = keyring.seal('value', 'tenant-a/KEY');
    expect(() => keyring.open(sealed, 'tenant-b/KEY')).toThrow();
    const [iv, body] = sealed.ciphertext.split('.');
    const flipped = Buffer.from(body, 'base64url');
    flipped[0] ^= 1;
    expect(() =>
      keyring.open({ keyId: 'old', ciphertext: `${iv}.${flipped.toString('base64url')}` }, 'tenant-a/KEY'),
    ).toThrow();
  });

  it('signs with the current key, verifies while the keyring holds the key, and refuses anything altered', () => {
    const signature = Keyring.parse(old).sign('payload', 'run-page');
    expect(signature.startsWith('old.')).toBe(true);
    const rotated = Keyring.parse(`${next},${old}`);
    expect(rotated.verify('payload', 'run-page', signature)).toBe(true);
    expect(rotated.sign('payload', 'run-page').startsWith('new.')).toBe(true);
    expect(rotated.verify('payload!', 'run-page', signature)).toBe(false);
    expect(rotated.verify('payload', 'other-use', signature)).toBe(false);
    const altered = `${signature.slice(0, -1)}${signature.endsWith('A') ? 'E' : 'A'}`;
    expect(rotated.verify('payload', 'run-page', altered)).toBe(false);
    expect(rotated.verify('payload', 'run-page', signature.replace(/^old/, 'new'))).toBe(false);
    expect(rotated.verify('payload', 'run-page', 'no-dot')).toBe(false);
    expect(Keyring.parse(next).verify('payload', 'run-page', signature)).toBe(false);
  });

  it('says which key is missing after it was dropped', () => {
    const sealed = Keyring.parse(old).seal('value', 'ctx');
    expect(() => Keyring.parse(next).open(sealed, 'ctx')).toThrow(/key "old"/);
  });

  it('gives equal values equal fingerprints, and different values different ones', () => {
    const keyring = Keyring.parse(old);
    expect(keyring.seal('a', 'ctx').fingerprint).toBe(keyring.seal('a', 'ctx').fingerprint);
    expect(keyring.seal('a', 'ctx').fingerprint).not.toBe(keyring.seal('b', 'ctx').fingerprint);
  });

  it('rejects keys of the wrong size', () => {
    expect(() => Keyring.parse(`k:${Buffer.alloc(16).toString('base64')}`)).toThrow(/32 bytes/);
  });
});
