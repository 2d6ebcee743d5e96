import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const DEPCRUISE = path.join(ROOT, 'node_modules/.bin/depcruise');

/**
 * `npm run layers` (.dependency-cruiser.cjs) on a small tree laid out as the project is: clean, it passes; with
 * an import planted that the layering forbids, it fails and names the file and the rule.
 */
describe('the layer rules', () => {
  let dir: string;
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  };
  const cruise = async () =>
    promisify(execFile)(DEPCRUISE, ['engine', 'api', 'operations', 'bin', '--config', '.dependency-cruiser.cjs'], {
      cwd: dir,
    }).then(
      ({ stdout }) => ({ failed: false, output: stdout }),
      (error: { stdout: string }) => ({ failed: true, output: error.stdout }),
    );

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'layers-'));
    for (const file of ['.dependency-cruiser.cjs', 'tsconfig.json'])
      copyFileSync(path.join(ROOT, file), path.join(dir, file));
    write('engine/store/index.ts', 'export const port = 1;\n');
    write('engine/store/sql/index.ts', "import { port } from '../index.ts';\nexport const adapter = port;\n");
    write('api/pages/index.ts', 'export const page = 1;\n');
    write('api/routes/index.ts', "export { route } from './flows.ts';\n");
    write('api/routes/flows.ts', "import { port } from '../../engine/store/index.ts';\nexport const route = port;\n");
    write('api/http/index.ts', 'export const problem = 1;\n');
    write('operations/index.ts', "import { port } from '../engine/store/index.ts';\nexport const family = port;\n");
    write('bin/main.ts', "import { adapter } from '../engine/store/sql/index.ts';\nexport const main = adapter;\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('pass a tree that keeps them, and name each planted import that breaks one', async () => {
    expect(await cruise()).toMatchObject({ failed: false });
    write('api/routes/planted-sql.ts', "export { adapter } from '../../engine/store/sql/index.ts';\n");
    write('api/routes/planted-page.ts', "export { page } from '../pages/index.ts';\n");
    write('api/http/planted-bin.ts', "export { main } from '../../bin/main.ts';\n");
    const { failed, output } = await cruise();
    expect(failed).toBe(true);
    expect(output).toMatch(/only-bin-opens-the-sql-adapter: api\/routes\/planted-sql\.ts/);
    expect(output).toMatch(/api-routes-imports-only-below: api\/routes\/planted-page\.ts/);
    expect(output).toMatch(/api-knows-no-bin: api\/http\/planted-bin\.ts/);
  });
});
