import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Keyring } from '../engine/secrets/keyring.ts';

/**
 * PGlite takes no lock on its directory and two processes on one directory corrupt it: the
 * embedded mode holds this lock file (with its pid) for as long as it runs.
 */
export class DataDirLock {
  private constructor(private readonly file: string) {}

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
      throw new Error(`another Tributary process (pid ${holder}) is using ${dataDir}: stop it, or set DATA_DIR to another directory`);
    }
    const file = path.join(dataDir, 'tributary.lock');
    // A lock left by a process that died is taken over.
    writeFileSync(file, String(process.pid), { mode: 0o600 });
    return new DataDirLock(file);
  }

  release() {
    rmSync(this.file, { force: true });
  }
}

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
