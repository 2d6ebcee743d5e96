import { describe, expect, it } from 'vitest';
import { SecretRedactor } from '../engine/secrets/redact.ts';

/** What a secret is replaced by wherever it would be shown (docs/concepts.md). */
const MASK = '[REDACTED]';

const secret = 'p@ss w/rd+"é"';

describe('SecretRedactor', () => {
  const redactor = new SecretRedactor([secret, 'tok-0123456789']);

  it('masks a secret as is, deeply, and leaves other text alone', () => {
    expect(redactor.redact({ a: [`x ${secret} y`, 3, null], b: { c: 'tok-0123456789' }, d: 'plain' })).toEqual({
      a: [`x ${MASK} y`, 3, null],
      b: { c: MASK },
      d: 'plain',
    });
  });

  it('masks the percent-encoded forms, in either case of hex digit, with + or %20 for a space', () => {
    const upper = encodeURIComponent(secret);
    const lower = upper.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());
    const form = new URLSearchParams({ s: secret }).toString().slice(2);
    const rfc3986 = upper.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    for (const encoded of [upper, lower, form, rfc3986])
      expect(redactor.redact(`https://erp.example/x?token=${encoded}&n=1`)).toBe(
        `https://erp.example/x?token=${MASK}&n=1`,
      );
  });

  it('masks the secret escaped inside JSON text', () => {
    const body = JSON.stringify({ password: secret });
    expect(body).not.toContain(secret);
    expect(redactor.redact(body)).toBe(`{"password":"${MASK}"}`);
  });

  it('masks Basic credentials that carry a secret, whatever the user name, and no others', () => {
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    expect(redactor.redact(`sent authorization: ${basic('someone', secret)}`)).toBe(
      `sent authorization: Basic ${MASK}`,
    );
    expect(redactor.redact(basic('tok-0123456789', 'x'))).toBe(`Basic ${MASK}`);
    const harmless = basic('someone', 'not-a-secret');
    expect(redactor.redact(harmless)).toBe(harmless);
  });

  it('masks a secret added after it was made (a destination opened mid-run)', () => {
    const later = new SecretRedactor();
    expect(later.redact('late-secret-1')).toBe('late-secret-1');
    later.add('late-secret-1');
    expect(later.redact('a late-secret-1 b')).toBe(`a ${MASK} b`);
  });
});
