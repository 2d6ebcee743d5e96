import { permanent, type FieldError } from './errors.ts';

/** Deepest nesting accepted in stored JSON (webhook bodies, API values). */
export const MAX_JSON_DEPTH = 100;

/**
 * Why a JSON text cannot be stored as PostgreSQL jsonb, if it cannot: `\u0000` or a lone surrogate
 * (`\ud800` without its pair) in a string, or nesting deeper than MAX_JSON_DEPTH. One pass over the
 * bytes, before anything is parsed or sent.
 */
export function unstorableJson(text: Buffer | string): string | undefined {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c) {
        if (bytes[i + 1] === 0x75) {
          const unit = parseInt(bytes.toString('latin1', i + 2, i + 6), 16);
          if (unit === 0) return 'contains the character \\u0000, which cannot be stored';
          if (unit >= 0xd800 && unit <= 0xdbff) {
            const next =
              bytes[i + 6] === 0x5c && bytes[i + 7] === 0x75
                ? parseInt(bytes.toString('latin1', i + 8, i + 12), 16)
                : NaN;
            if (!(next >= 0xdc00 && next <= 0xdfff))
              return 'contains a lone surrogate (\\ud800-\\udbff without its pair), which cannot be stored';
            i += 6;
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            return 'contains a lone surrogate (\\udc00-\\udfff without its pair), which cannot be stored';
          }
          i += 5;
        } else {
          i++;
        }
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

/**
 * A JSON document kept as the text it came in (checked: valid and storable), stored without being parsed
 * here. stringifyJson writes it as it is; JSON.stringify, as parseJson reads it.
 */
export class JsonText {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    if (!rawTexts) return parseJson(this.text);
    return `\u0000json:${rawTexts.push(this.text) - 1}`;
  }
}

/** While stringifyJson runs (JSON.stringify is synchronous): the texts of the JsonTexts it met, in order. */
let rawTexts: string[] | undefined;

/** Sixteen digits in a row: where an integer beyond Number.MAX_SAFE_INTEGER (2^53 - 1) may be. */
const LONG_DIGITS = /\d{16}/;

/**
 * JSON.parse, except that an integer JavaScript cannot hold exactly (beyond 2^53 - 1, like the order id
 * 820982911946154508 in Shopify's sample webhooks) is read as the string of its digits instead of being
 * rounded. Texts without sixteen digits in a row, nearly all, go straight to JSON.parse.
 */
export function parseJson(text: string): unknown {
  return JSON.parse(LONG_DIGITS.test(text) ? quoteUnsafeIntegers(text) : text);
}

/** The text with each integer literal beyond 2^53 - 1 (outside strings) put in quotes. */
function quoteUnsafeIntegers(text: string): string {
  let quoted = '';
  let copiedTo = 0;
  for (const [start, end] of unsafeIntegers(text)) {
    quoted += `${text.slice(copiedTo, start)}"${text.slice(start, end)}"`;
    copiedTo = end;
  }
  return copiedTo === 0 ? text : quoted + text.slice(copiedTo);
}

/** Where the integer literals beyond 2^53 - 1 are in a JSON text (outside strings): [start, end) of each. */
function* unsafeIntegers(text: string): Generator<[number, number]> {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      let end = i + 1;
      while (end < text.length && NUMBER_CHAR.test(text[end])) end++;
      const literal = text.slice(i, end);
      if (INTEGER.test(literal) && !Number.isSafeInteger(Number(literal))) yield [i, end];
      i = end - 1;
    }
  }
}

/**
 * Refuses an integer beyond 2^53 - 1 where a JSON text must mean what it says (the API's bodies): read as
 * the string of its digits, it would pass where a string belongs; rounded, it would change.
 */
export function unsafeIntegerFault(text: string): JsonTextFault | undefined {
  if (!LONG_DIGITS.test(text)) return undefined;
  for (const [start, end] of unsafeIntegers(text))
    return {
      malformed: false,
      message:
        `has the integer ${text.slice(start, end)}, beyond 2^53 - 1, which a JSON number here cannot hold ` +
        'exactly: send it as a string',
    };
  return undefined;
}

const NUMBER_CHAR = /[-+.eE0-9]/;
const INTEGER = /^-?\d+$/;

/** A placeholder stringifyJson writes for a JsonText (a NUL cannot be in anything stored or accepted). */
const PLACEHOLDER = /"\\u0000json:(\d+)"/g;

/**
 * JSON.stringify, with each JsonText written as its own text: its numbers exactly as they came. Without a
 * replacer function, so that answers without a JsonText cost what JSON.stringify costs.
 */
export function stringifyJson(value: unknown): string {
  const texts: string[] = [];
  rawTexts = texts;
  try {
    const json = JSON.stringify(value);
    return texts.length === 0 ? json : json.replace(PLACEHOLDER, (_, index: string) => texts[Number(index)]);
  } finally {
    rawTexts = undefined;
  }
}

/**
 * JSON texts longer than this are large: checked off the event loop (JsonChecker), stored on their
 * own (GroupCommit's heavy items), given to a run unparsed until something reads them (parseOnRead).
 */
export const LARGE_JSON_LENGTH = 32 * 1024;

/** Whether a value is a large JSON text (LARGE_JSON_LENGTH). */
export const isLargeJson = (value: unknown): value is JsonText =>
  value instanceof JsonText && value.text.length > LARGE_JSON_LENGTH;

/** The texts of properties defined by parseOnRead that nothing has read yet. */
const unread = new WeakMap<object, Map<string, JsonText>>();

/**
 * Makes `target[key]` the value of `text`, parsed when it is first read: a run whose expressions go to
 * the sandbox, or whose flow never looks at its body, never parses a large body on the event loop.
 * Writing the property replaces it.
 */
export function parseOnRead(target: object, key: string, text: JsonText): void {
  const texts = unread.get(target) ?? new Map<string, JsonText>();
  unread.set(target, texts);
  texts.set(key, text);
  let value: unknown;
  Object.defineProperty(target, key, {
    enumerable: true,
    configurable: true,
    get() {
      const pending = texts.get(key);
      if (pending) {
        value = parseJson(pending.text);
        texts.delete(key);
      }
      return value;
    },
    set(next: unknown) {
      texts.delete(key);
      value = next;
    },
  });
}

/** The text of a parseOnRead property that nothing has read yet. */
export const unreadText = (target: unknown, key: string): JsonText | undefined =>
  target !== null && typeof target === 'object' ? unread.get(target)?.get(key) : undefined;

/** What is wrong with a JSON text, if anything. */
export interface JsonTextFault {
  /** Not JSON at all (else: JSON the store cannot keep as it is). */
  malformed: boolean;
  message: string;
}

/** A number literal JSON.parse would turn into Infinity: an exponent of three digits, or 309 digits in a row. */
const HUGE_NUMBER = /\d[eE]\+?\d{3}|\d{309}/;

/**
 * Whether a JSON text can be accepted as it is: storable (unstorableJson), valid, and with no number
 * JSON cannot carry (`1e400` would be stored as null). Its cost grows with the text: see JsonChecker.
 */
export function checkJsonText(raw: Buffer): JsonTextFault | undefined {
  return parseJsonText(raw).fault;
}

/** A JSON text's value, if it can be accepted (checkJsonText), else what is wrong with it. */
export function parseJsonText(raw: Buffer): { value: unknown; fault?: undefined } | { fault: JsonTextFault } {
  const unstorable = unstorableJson(raw);
  if (unstorable) return { fault: { malformed: false, message: unstorable } };
  const text = raw.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
    if (LONG_DIGITS.test(text)) value = parseJson(text);
  } catch (error) {
    return { fault: { malformed: true, message: `is not valid JSON: ${(error as Error).message}` } };
  }
  // Rare, so looked for only when the text has such a literal (it may sit in a string).
  if (HUGE_NUMBER.test(text) && hasNonFiniteNumber(value))
    return {
      fault: { malformed: false, message: 'has a number too large for JSON to carry (it would be stored as null)' },
    };
  return { value };
}

/** Walks a parsed value without recursion (it may nest deeply). */
function hasNonFiniteNumber(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'number' && !Number.isFinite(item)) return true;
    if (item !== null && typeof item === 'object') for (const inner of Object.values(item)) pending.push(inner);
  }
  return false;
}

const ESCAPED_HIGH_SURROGATE = String.raw`\\ud[89ab][0-9a-f]{2}`;
const ESCAPED_LOW_SURROGATE = String.raw`\\ud[c-f][0-9a-f]{2}`;

/**
 * `\u0000` and lone surrogates in JSON text (after an even number of backslashes, so an escaped
 * backslash followed by "u0000" is left alone): what jsonb refuses.
 */
const UNSTORABLE_ESCAPE = new RegExp(
  String.raw`(?<!\\)((?:\\\\)*)(?:\\u0000|${ESCAPED_HIGH_SURROGATE}(?!${ESCAPED_LOW_SURROGATE})` +
    `|(?<!${ESCAPED_HIGH_SURROGATE})${ESCAPED_LOW_SURROGATE})`,
  'gi',
);

/**
 * A value as it can be stored: its JSON, with every `\u0000` and lone surrogate replaced by U+FFFD,
 * and that JSON parsed again, so what a run goes on with is plain data, equal to what a later pass
 * reads back. Throws an OperationError (permanent) for a value JSON cannot carry (circular, BigInt).
 */
export function storableJson(value: unknown): { text: string; value: unknown } {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw permanent(`the value cannot be stored as JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  // A function or undefined has no JSON: stored as null, as JSON.stringify does inside arrays.
  if (text === undefined) return { text: 'null', value: null };
  text = text.replace(UNSTORABLE_ESCAPE, '$1\\ufffd');
  return { text, value: JSON.parse(text) };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string cannot be stored, if it cannot: NUL, or a lone surrogate. */
function unstorableString(text: string): string | undefined {
  if (text.includes('\0')) return 'contains the character \\u0000, which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'contains a lone surrogate (half of a UTF-16 pair), which cannot be stored';
  return undefined;
}

/** Whether any string (key or value) in a parsed value cannot be stored: one pass, no paths made. */
function holdsUnstorableString(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (unstorableString(item)) return true;
    } else if (Array.isArray(item)) {
      for (const inner of item) pending.push(inner);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, inner] of Object.entries(item)) {
        if (unstorableString(key)) return true;
        pending.push(inner);
      }
    }
  }
  return false;
}

/**
 * Every string (key or value) in a parsed value that cannot be stored, each with its JSON path; at
 * most 20. Paths are made only when there is something to report: the common case is one cheap pass.
 */
export function unstorableStrings(value: unknown, path = '$', found: FieldError[] = []): FieldError[] {
  if (!holdsUnstorableString(value)) return found;
  return unstorablePaths(value, path, found);
}

function unstorablePaths(value: unknown, path: string, found: FieldError[]): FieldError[] {
  if (found.length >= 20) return found;
  if (typeof value === 'string') {
    const reason = unstorableString(value);
    if (reason) found.push({ path, message: reason });
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) unstorablePaths(item, `${path}[${index}]`, found);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const keyReason = unstorableString(key);
      const at = `${path}[${JSON.stringify(key.replace(/[\0\ud800-\udfff]/g, '\ufffd'))}]`;
      if (keyReason) found.push({ path: at, message: `its name ${keyReason}` });
      else unstorablePaths(item, /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : at, found);
    }
  }
  return found;
}
