export const MASK = '[REDACTED]';

/**
 * Replace every occurrence of a secret value inside `value` (deeply, in strings and keys' values).
 * Operations may echo what they sent; run records and logs must not keep it.
 */
export function redactSecrets(value: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return value;
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string')
      return secrets.reduce((text, secret) => (text.includes(secret) ? text.split(secret).join(MASK) : text), item);
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === 'object')
      return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, walk(inner)]));
    return item;
  };
  return walk(value);
}
