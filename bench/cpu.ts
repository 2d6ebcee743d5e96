/**
 * CPU time spent by each process on the machine over a window (Linux /proc): shows where a
 * measured run's cost goes (the worker, PostgreSQL, Redis) on a machine whose cores they share.
 */
import { readdirSync, readFileSync } from 'node:fs';

type Snapshot = Map<string, { name: string; ticks: number }>;
const TICKS_PER_SECOND = 100;

/** CPU time a process used so far, in ms (0 when it is gone). */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function snapshot(): Snapshot {
  const processes: Snapshot = new Map();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return processes;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime, fields 14 and 15 of stat(5).
      processes.set(pid, {
        name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        ticks: Number(fields[11]) + Number(fields[12]),
      });
    } catch {
      // The process ended meanwhile.
    }
  }
  return processes;
}

/**
 * Starts a window; `end(measuredPid, units)` gives CPU milliseconds per unit: the measured process, PostgreSQL,
 * Redis, the rest.
 */
export function cpuWindow() {
  const start = snapshot();
  return (measuredPid: number | undefined, units: number) => {
    const totals = { measured: 0, postgres: 0, redis: 0, other: 0 };
    for (const [pid, { name, ticks }] of snapshot()) {
      const used = ticks - (start.get(pid)?.ticks ?? 0);
      if (used <= 0) continue;
      const into =
        Number(pid) === measuredPid
          ? 'measured'
          : name.startsWith('postgres')
            ? 'postgres'
            : name.startsWith('redis')
              ? 'redis'
              : 'other';
      totals[into] += used;
    }
    const perUnit = (ticks: number) => +((ticks * 1000) / TICKS_PER_SECOND / units).toFixed(2);
    return {
      measured: perUnit(totals.measured),
      postgres: perUnit(totals.postgres),
      redis: perUnit(totals.redis),
      other: perUnit(totals.other),
    };
  };
}
