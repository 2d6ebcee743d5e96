/** Deepest nesting accepted in stored JSON (webhook bodies, API values). */
export const MAX_JSON_DEPTH = 100;

/**
 * Why a JSON text cannot be stored as PostgreSQL jsonb, if it cannot: `\u0000` in a string, or
 * nesting deeper than MAX_JSON_DEPTH. One pass over the bytes, before anything is parsed or sent.
 */
export function unstorableJson(text: Buffer | string): string | undefined {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c) {
        if (bytes[i + 1] === 0x75 && bytes[i + 2] === 0x30 && bytes[i + 3] === 0x30 && bytes[i + 4] === 0x30 && bytes[i + 5] === 0x30) {
          return 'contains the character \\u0000, which cannot be stored';
        }
        i++;
      } else if (byte === 0x22) {
        inString = false;
      }
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return `nests deeper than ${MAX_JSON_DEPTH} levels`;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--;
    }
  }
  return undefined;
}

/** A value's JSON with every \u0000 replaced by U+FFFD: what an operation's output can be stored as. */
export function storableJson(value: unknown): { text: string; value: unknown } {
  const text = JSON.stringify(value);
  if (!text.includes('\\u0000')) return { text, value };
  const cleaned = text.replace(/\\u0000/g, '\\ufffd');
  return { text: cleaned, value: JSON.parse(cleaned) };
}
