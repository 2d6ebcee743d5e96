export const MASK = '[REDACTED]';

/** Shorter credentials are refused when stored: masking every occurrence of a short string garbles text. */
export const MIN_SECRET_LENGTH = 8;

/** `Basic <base64 of user:password>`, the one encoding whose text cannot be predicted from the secret alone. */
const BASIC_CREDENTIALS = /(Basic\s+)([A-Za-z0-9+/]{4,}={0,2})/gi;

/**
 * Masks the secret values a run has opened wherever they appear in what it stores or logs, in the
 * forms a secret takes on the wire: as is, percent-encoded (either case of hex digit, `+` or `%20`
 * for a space), escaped inside JSON text, and inside HTTP Basic credentials. Operations may echo
 * what they sent; run records and logs must not keep it.
 */
export class SecretRedactor {
  private readonly secrets = new Set<string>();
  private pattern?: RegExp;

  constructor(secrets: Iterable<string> = []) {
    for (const secret of secrets) this.add(secret);
  }

  add(secret: string) {
    if (secret.length === 0 || this.secrets.has(secret)) return;
    this.secrets.add(secret);
    this.pattern = undefined;
  }

  /** `value` with every secret masked, deeply (strings, array items, object values). */
  redact<T>(value: T): T {
    if (this.secrets.size === 0) return value;
    const pattern = (this.pattern ??= wireForms([...this.secrets]));
    const walk = (item: unknown): unknown => {
      if (typeof item === 'string') return this.redactText(item, pattern);
      if (Array.isArray(item)) return item.map(walk);
      if (item !== null && typeof item === 'object')
        return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, walk(inner)]));
      return item;
    };
    return walk(value) as T;
  }

  private redactText(text: string, pattern: RegExp): string {
    const masked = text.replace(pattern, MASK);
    if (!/basic/i.test(masked)) return masked;
    return masked.replace(BASIC_CREDENTIALS, (whole, scheme: string, encoded: string) => {
      const decoded = Buffer.from(encoded, 'base64').toString('utf8');
      return [...this.secrets].some((secret) => decoded.includes(secret)) ? `${scheme}${MASK}` : whole;
    });
  }
}

/** One pattern for every form of every secret, longest first so that a longer form wins over its prefix. */
function wireForms(secrets: string[]): RegExp {
  const forms = new Set<string>();
  for (const secret of secrets) {
    forms.add(literal(secret));
    forms.add(literal(JSON.stringify(secret).slice(1, -1)));
    const encoded = encodeURIComponent(secret).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
    forms.add(percentForm(encoded));
    forms.add(percentForm(encoded.replaceAll('%20', '+')));
    forms.add(percentForm(encodeURIComponent(secret)));
  }
  return new RegExp([...forms].sort((a, b) => b.length - a.length).join('|'), 'g');
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A percent-encoded text as a pattern whose hex digits match in either case. */
const percentForm = (encoded: string) =>
  literal(encoded).replace(
    /%([0-9A-Fa-f])([0-9A-Fa-f])/g,
    (_, high: string, low: string) => `%${hexDigit(high)}${hexDigit(low)}`,
  );

const hexDigit = (digit: string) => (/[a-f]/i.test(digit) ? `[${digit.toLowerCase()}${digit.toUpperCase()}]` : digit);
