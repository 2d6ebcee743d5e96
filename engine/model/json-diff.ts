/** Two JSON values compared field by field, for people to read: what a push, a promotion or a test changes. */

/** A JSON value with every object's keys in order, so that equal documents print the same. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

const SHOWN_CHARACTERS = 80;
const shown = (value: unknown) => {
  const text = JSON.stringify(value);
  return text.length > SHOWN_CHARACTERS ? `${text.slice(0, SHOWN_CHARACTERS - 3)}...` : text;
};

/** What changes from `before` to `after`, one line per field: `~` changed, `+` added, `-` removed. */
export function jsonDiff(before: unknown, after: unknown, path = '$'): string[] {
  const isObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value);
  if (Array.isArray(before) && Array.isArray(after)) {
    const lines: string[] = [];
    for (let i = 0; i < Math.max(before.length, after.length); i++) {
      if (i >= after.length) lines.push(`- ${path}[${i}]: ${shown(before[i])}`);
      else if (i >= before.length) lines.push(`+ ${path}[${i}]: ${shown(after[i])}`);
      else lines.push(...jsonDiff(before[i], after[i], `${path}[${i}]`));
    }
    return lines;
  }
  if (isObject(before) && isObject(after)) {
    const [from, to] = [before as Record<string, unknown>, after as Record<string, unknown>];
    const lines: string[] = [];
    for (const key of [...new Set([...Object.keys(from), ...Object.keys(to)])].sort()) {
      const at = /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!(key in to)) lines.push(`- ${at}: ${shown(from[key])}`);
      else if (!(key in from)) lines.push(`+ ${at}: ${shown(to[key])}`);
      else lines.push(...jsonDiff(from[key], to[key], at));
    }
    return lines;
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [`~ ${path}: ${shown(before)} -> ${shown(after)}`];
}
