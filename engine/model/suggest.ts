/** The candidate closest to a mistyped name, if one is close enough to be what was meant. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  // Within 2 edits, or 1 for short names, where 2 edits reach too many other words.
  const limit = name.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase(), bestDistance);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `did you mean X?` for a message, or nothing. */
export function suggestion(name: string, candidates: Iterable<string>, prefix = ''): string {
  const found = closest(name, candidates);
  return found === undefined ? '' : `: did you mean ${prefix}${found}?`;
}

/** Levenshtein distance, with adjacent transpositions counted as one edit; stops counting past `cap`. */
function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let before = Array.from({ length: b.length + 1 }, (_, j) => j);
  let previous = before;
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = previous;
    previous = row;
  }
  return previous[b.length];
}
