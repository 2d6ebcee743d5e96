import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';

/** A machine of the drill: its processes, reached at its own address (or this machine's, on its own port). */
export interface Host {
  readonly name: string;
  /** Where its processes are reached and where they listen. */
  readonly address: string;
  /** Start a process on it. */
  spawn(command: string[], env: Record<string, string>): ChildProcess;
  /** kill -9 every process on it. */
  kill(): void;
  /** Cut it off the network; `restore` puts it back. */
  cut(): void;
  restore(): void;
}

/**
 * Hosts in network namespaces of their own on this machine, each with a veth link to one bridge: they reach
 * each other and this machine (the bridge's address) only over it, so a link set down is a network cut.
 * Needs root and iproute2; `create` answers undefined where namespaces cannot be made.
 */
export class NamespaceNetwork {
  private readonly hosts: string[] = [];

  private constructor(
    private readonly name: string,
    private readonly subnet: string,
  ) {}

  /** The bridge's address: this machine as the hosts see it. */
  get gateway(): string {
    return `${this.subnet}.1`;
  }

  /**
   * The network of one drill, named and numbered after its process (`slot`): two drills on one machine (two copies of
   * the suite) keep apart.
   */
  static create(slot = process.pid % 250): NamespaceNetwork | undefined {
    const name = `td${slot}`;
    const network = new NamespaceNetwork(name, `10.231.${slot}`);
    // A drill killed before it cleaned up leaves its namespaces and bridge: start from nothing.
    network.destroy();
    const trial = spawnSync('ip', ['netns', 'add', `${name}-trial`]);
    if (trial.status !== 0) return undefined;
    ip('netns', 'del', `${name}-trial`);
    ip('link', 'add', name, 'type', 'bridge');
    ip('addr', 'add', `${network.gateway}/24`, 'dev', name);
    ip('link', 'set', name, 'up');
    return network;
  }

  /** A host at `<subnet>.<number>`. */
  host(name: string, number: number): Host {
    const namespace = `${this.name}-${name}`;
    const link = `${this.name}-${name}`.slice(0, 15);
    const address = `${this.subnet}.${number}`;
    ip('netns', 'add', namespace);
    ip('link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
    ip('link', 'set', link, 'master', this.name, 'up');
    ip('-n', namespace, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    ip('-n', namespace, 'link', 'set', 'eth0', 'up');
    ip('-n', namespace, 'link', 'set', 'lo', 'up');
    this.hosts.push(namespace);
    return {
      name,
      address,
      spawn: (command, env) =>
        spawn('ip', ['netns', 'exec', namespace, ...command], { env: { ...process.env, ...env }, stdio: 'pipe' }),
      kill: () => {
        const pids = spawnSync('ip', ['netns', 'pids', namespace]).stdout.toString().trim().split(/\s+/);
        for (const pid of pids.filter(Boolean)) spawnSync('kill', ['-9', pid]);
      },
      cut: () => ip('link', 'set', link, 'down'),
      restore: () => ip('link', 'set', link, 'up'),
    };
  }

  destroy() {
    const namespaces = spawnSync('ip', ['netns', 'list']).stdout.toString();
    for (const line of namespaces.split('\n')) {
      const namespace = line.split(' ')[0];
      if (!namespace.startsWith(`${this.name}-`)) continue;
      for (const pid of spawnSync('ip', ['netns', 'pids', namespace]).stdout.toString().split(/\s+/).filter(Boolean))
        spawnSync('kill', ['-9', pid]);
      spawnSync('ip', ['netns', 'del', namespace]);
    }
    spawnSync('ip', ['link', 'del', this.name]);
  }
}

/**
 * Without namespaces: hosts are groups of processes on this machine's loopback, on ports of their own. A cut is
 * then a freeze (SIGSTOP, SIGCONT to restore): the processes stop answering and sending, as behind a cut link,
 * but their timers stand still too.
 */
export function localHost(name: string): Host {
  const children: ChildProcess[] = [];
  const signal = (name: NodeJS.Signals) => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill(name);
  };
  return {
    name,
    address: '127.0.0.1',
    spawn: (command, env) => {
      const child = spawn(command[0], command.slice(1), { env: { ...process.env, ...env }, stdio: 'pipe' });
      children.push(child);
      return child;
    },
    kill: () => signal('SIGKILL'),
    cut: () => signal('SIGSTOP'),
    restore: () => signal('SIGCONT'),
  };
}

function ip(...args: string[]) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
