import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The build's commit: BUILD_COMMIT (set by a packaging step), else the checkout's HEAD, else null. */
export function buildCommit(configured: string | undefined): string | null {
  if (configured) return configured;
  const git = path.join(root, '.git');
  try {
    const head = readFileSync(path.join(git, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return head;
    const ref = head.slice(5);
    try {
      return readFileSync(path.join(git, ref), 'utf8').trim();
    } catch {
      const packed = readFileSync(path.join(git, 'packed-refs'), 'utf8')
        .split('\n')
        .find((line) => line.endsWith(` ${ref}`));
      return packed?.split(' ')[0] ?? null;
    }
  } catch {
    return null;
  }
}
