import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keyring } from '../engine/secrets/index.ts';

/**
 * PGlite takes no lock on its directory and two processes on one directory corrupt it: the
 * embedded mode holds this lock file (with its pid) for as long as it runs.
 */
export class DataDirLock {
  private constructor(
    private readonly file: string,
    private readonly entry: string,
  ) {}

  /**
   * The data directories of the embedded servers running on this machine for this user, so that a
   * CLI command run without DATA_DIR can say which one to point at.
   */
  static running(): Array<{ pid: number; dataDir: string }> {
    if (!existsSync(RUNNING_DIR)) return [];
    return readdirSync(RUNNING_DIR).flatMap((name) => {
      const pid = Number(name);
      if (!Number.isInteger(pid) || !isAlive(pid)) return [];
      try {
        const dataDir = readFileSync(path.join(RUNNING_DIR, name), 'utf8');
        return DataDirLock.holder(dataDir) === pid ? [{ pid, dataDir }] : [];
      } catch {
        return [];
      }
    });
  }

  static holder(dataDir: string): number | undefined {
    const file = path.join(dataDir, 'tributary.lock');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8'));
    return Number.isInteger(pid) && pid !== process.pid && isAlive(pid) ? pid : undefined;
  }

  static acquire(dataDir: string): DataDirLock {
    mkdirSync(dataDir, { recursive: true });
    const holder = DataDirLock.holder(dataDir);
    if (holder !== undefined) {
      throw new Error(
        `another Tributary process (pid ${holder}) is using ${dataDir}: stop it, or set DATA_DIR to another directory`,
      );
    }
    const file = path.join(dataDir, 'tributary.lock');
    // A lock left by a process that died is taken over.
    writeFileSync(file, String(process.pid), { mode: 0o600 });
    mkdirSync(RUNNING_DIR, { recursive: true, mode: 0o700 });
    const entry = path.join(RUNNING_DIR, String(process.pid));
    writeFileSync(entry, path.resolve(dataDir), { mode: 0o600 });
    return new DataDirLock(file, entry);
  }

  release() {
    rmSync(this.file, { force: true });
    rmSync(this.entry, { force: true });
  }
}

/** Where embedded servers note their DATA_DIR while they run (per user, like the data itself). */
const RUNNING_DIR = path.join(os.tmpdir(), `tributary-${os.userInfo().uid}`);

/** The embedded store's database directory under DATA_DIR. */
export const embeddedStorePath = (dataDir: string) => path.join(dataDir, 'pglite');

/** Whether DATA_DIR holds an embedded store (created by `serve` or `migrate`). */
export const embeddedStoreExists = (dataDir: string) => existsSync(path.join(embeddedStorePath(dataDir), 'PG_VERSION'));

function isAlive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The embedded mode's key: generated once under DATA_DIR, readable by its owner only. */
export function embeddedKeyring(dataDir: string): Keyring {
  const file = path.join(dataDir, 'secrets.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, Keyring.generateEntry(), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return Keyring.parse(readFileSync(file, 'utf8'));
}
