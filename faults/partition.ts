/**
 * Network partitions of one node of the project's cluster, on loopback only, with iptables.
 *
 * All nodes listen on 127.0.0.1, so a node's traffic is told apart by ports: connections the others
 * opened to it end at its transport port; connections it opened to them start at an ephemeral port of
 * its own process. Those already open are found in /proc (the node's sockets whose far end is another
 * node's transport port); the node is moved into a cgroup of its own first, so that any connection it
 * opens afterwards is matched by `-m cgroup` in OUTPUT (every loopback packet passes OUTPUT, with the
 * sending socket known there). The other nodes keep talking to each other; the cut node's HTTP port
 * keeps answering clients unless the cut includes it.
 *
 * Every rule lives in one chain, ESLOCKS-FAULTS, jumped to from OUTPUT for loopback packets only:
 * flushed when the runner opens the firewall, when a cut heals, and on exit (also on SIGINT/SIGTERM
 * and after a failure); a crashed run's leftovers are flushed by the next one. Nothing outside that
 * chain and the cluster's own ports is touched.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClusterNode, nodePid } from '../infra/es/cluster.js';
import { which } from '../infra/lib/which.js';

export const CHAIN = 'ESLOCKS-FAULTS';
/** Each cut node's cgroup is `<its cgroup>/<prefix><node name>`. */
const CGROUP_PREFIX = 'eslocks-faults-';

export type CutMode = 'reset' | 'drop';

export interface Cut {
  /** How many rules the cut took (for the log). */
  rules: number;
  heal(): void;
}

export interface Firewall {
  /** Cuts `node` off from the other nodes' transport (and its HTTP port from clients with `http`). */
  cut(node: ClusterNode, all: readonly ClusterNode[], options: { mode: CutMode; http: boolean }): Promise<Cut>;
  /** Heals any cut and removes the chain. */
  close(): void;
}

export type FirewallOpening = { firewall: Firewall } | { unavailable: string };

const run = (command: string, args: string[]): { ok: boolean; output: string } => {
  const result = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const output = `${result.stderr ?? ''}${result.stdout ?? ''}${result.error ? String(result.error) : ''}`.trim();
  return { ok: result.status === 0, output };
};

const lastLine = (text: string): string => text.split('\n').filter(Boolean).at(-1) ?? '';

const findIptables = (): string | undefined => which('iptables') ?? ['/usr/sbin/iptables', '/sbin/iptables'].find((path) => existsSync(path));

/**
 * iptables, installed from Debian's packages when missing and we are root (CI runs a clean clone on
 * the same kind of machine, so the runner installs what it needs); a reason when that cannot be.
 */
function ensureIptables(log: (line: string) => void): { path: string } | { unavailable: string } {
  const found = findIptables();
  if (found) return { path: found };
  if (process.getuid?.() !== 0)
    return { unavailable: 'iptables is not installed and this is not root (as root the runner installs it: apt-get install -y iptables)' };
  if (!which('apt-get')) return { unavailable: 'iptables is not installed and there is no apt-get to install it with' };
  log('installing iptables (apt-get install -y iptables) for the partition faults');
  let install = run('apt-get', ['install', '-y', '-q', 'iptables']);
  // A fresh machine has no package lists yet.
  if (!install.ok) {
    run('apt-get', ['update', '-q']);
    install = run('apt-get', ['install', '-y', '-q', 'iptables']);
  }
  const installed = findIptables();
  if (!install.ok || !installed) return { unavailable: `apt-get install -y iptables failed: ${lastLine(install.output)}` };
  return { path: installed };
}

/** Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host). */
function cgroup2Mount(): string | undefined {
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n');
  return mounts.map((line) => line.split(' ')).find((fields) => fields[2] === 'cgroup2')?.[1];
}

/** A process's cgroup v2 path (`/` or `/a/b`), relative to the hierarchy's root. */
function cgroupOf(pid: number): string | undefined {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('0::'));
  return line?.slice(3) || undefined;
}

/** The node's open TCP connections to other nodes' transport ports: [its local port, their port]. */
function connectionsTo(pid: number, ports: ReadonlySet<number>): Array<[number, number]> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1));
    } catch {
      // closed meanwhile
    }
  }
  const found: Array<[number, number]> = [];
  for (const table of ['tcp', 'tcp6']) {
    const path = `/proc/${pid}/net/${table}`;
    if (!existsSync(path)) continue;
    for (const line of readFileSync(path, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      const local = Number.parseInt(fields[1]!.split(':')[1]!, 16);
      const remote = Number.parseInt(fields[2]!.split(':')[1]!, 16);
      if (ports.has(remote)) found.push([local, remote]);
    }
  }
  return found;
}

export function openFirewall(nodes: readonly ClusterNode[], log: (line: string) => void): FirewallOpening {
  if (process.platform !== 'linux') return { unavailable: 'partitions use iptables, which needs Linux' };
  const iptablesFound = ensureIptables(log);
  if ('unavailable' in iptablesFound) return iptablesFound;
  if (process.getuid?.() !== 0) return { unavailable: 'iptables rules need root' };
  const mount = cgroup2Mount();
  if (!mount) return { unavailable: "no cgroup v2 hierarchy is mounted (a cut tells the node's new connections apart by its cgroup)" };
  // A cut moves the node into a cgroup of its own: that must be possible here.
  const ours = cgroupOf(process.pid) ?? '/';
  const trial = join(mount, ours, `${CGROUP_PREFIX}trial-${process.pid}`);
  try {
    mkdirSync(trial);
    rmdirSync(trial);
  } catch (error) {
    return { unavailable: `cannot create a cgroup under ${join(mount, ours)} (${(error as Error).message})` };
  }
  const iptables = (...args: string[]) => run(iptablesFound.path, ['-w', ...args]);
  const jump = ['OUTPUT', '-o', 'lo', '-j', CHAIN];

  let current: { node: ClusterNode; pid: number; home: string; own: string } | undefined;
  const returnHome = (pid: number, home: string, own: string): void => {
    try {
      if (existsSync(`/proc/${pid}`)) writeFileSync(join(mount, home, 'cgroup.procs'), String(pid));
    } catch {
      // gone meanwhile: its cgroup empties on its own
    }
    try {
      rmdirSync(join(mount, own));
    } catch {
      // still busy (a process exiting): the next run removes it
    }
  };
  const heal = (): void => {
    iptables('-F', CHAIN);
    if (current) returnHome(current.pid, current.home, current.own);
    current = undefined;
  };
  // A crashed earlier run may have left rules or a node in a cgroup of ours: undo both first.
  iptables('-N', CHAIN);
  const flushed = iptables('-F', CHAIN);
  if (!flushed.ok) return { unavailable: `iptables cannot manage chain ${CHAIN}: ${lastLine(flushed.output)}` };
  for (const node of nodes) {
    const pid = nodePid(node);
    const at = pid ? cgroupOf(pid) : undefined;
    if (pid && at && at.split('/').at(-1)!.startsWith(CGROUP_PREFIX)) returnHome(pid, at.slice(0, at.lastIndexOf('/')) || '/', at);
  }
  if (!iptables('-C', ...jump).ok) {
    const hooked = iptables('-I', ...jump.slice(0, 1), '1', ...jump.slice(1));
    if (!hooked.ok) return { unavailable: `iptables cannot hook chain ${CHAIN} into OUTPUT: ${lastLine(hooked.output)}` };
  }
  // The cgroup match must work here (kernel support), or a cut would leave the node's new connections open.
  const probe = iptables('-A', CHAIN, '-o', 'lo', '-p', 'tcp', '-m', 'cgroup', '--path', '/', '--dport', '1', '-j', 'RETURN');
  iptables('-F', CHAIN);
  if (!probe.ok) {
    iptables('-D', ...jump);
    iptables('-X', CHAIN);
    return { unavailable: `iptables' cgroup match does not work here: ${lastLine(probe.output)}` };
  }

  const close = (): void => {
    heal();
    while (iptables('-D', ...jump).ok) {
      // a jump added twice (two runs at once) goes too
    }
    iptables('-X', CHAIN);
    process.off('exit', close);
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    close();
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  };
  process.on('exit', close);
  for (const signal of SIGNALS) process.on(signal, onSignal);

  const cut = async (node: ClusterNode, all: readonly ClusterNode[], options: { mode: CutMode; http: boolean }): Promise<Cut> => {
    heal();
    const pid = nodePid(node);
    if (!pid) throw new Error(`${node.name} is not running: nothing to cut off`);
    const home = cgroupOf(pid);
    if (!home) throw new Error(`${node.name} (pid ${pid}) has no cgroup v2 path in /proc/${pid}/cgroup`);
    const own = `${home === '/' ? '' : home}/${CGROUP_PREFIX}${node.name}`;
    mkdirSync(join(mount, own), { recursive: true });
    current = { node, pid, home, own };
    const action = options.mode === 'reset' ? ['-j', 'REJECT', '--reject-with', 'tcp-reset'] : ['-j', 'DROP'];
    const others = all.filter((other) => other.name !== node.name);
    const added = new Set<string>();
    const rule = (...match: string[]): void => {
      const key = match.join(' ');
      if (added.has(key)) return;
      const result = iptables('-A', CHAIN, '-o', 'lo', '-p', 'tcp', ...match, ...action);
      if (!result.ok) throw new Error(`iptables -A ${CHAIN} ${key} failed: ${lastLine(result.output)}`);
      added.add(key);
    };
    try {
      // From here on every socket the node opens carries this cgroup; those it had are listed below.
      writeFileSync(join(mount, own, 'cgroup.procs'), String(pid));
      // Connections the other nodes opened to this one, both ways.
      rule('--dport', String(node.transportPort));
      rule('--sport', String(node.transportPort));
      // Connections this node opens from now on.
      for (const other of others) rule('-m', 'cgroup', '--path', own, '--dport', String(other.transportPort));
      if (options.http) {
        rule('--dport', String(node.port));
        rule('--sport', String(node.port));
      }
      // Connections this node had opened before the move, both ways; looked for twice, for one being opened meanwhile.
      const ports = new Set(others.map((other) => other.transportPort));
      for (const pass of [0, 1]) {
        if (pass === 1) await new Promise((resolve) => setTimeout(resolve, 500));
        for (const [local, remote] of connectionsTo(pid, ports)) {
          rule('--sport', String(local), '--dport', String(remote));
          rule('--sport', String(remote), '--dport', String(local));
        }
      }
    } catch (error) {
      heal();
      throw error;
    }
    return { rules: added.size, heal };
  };
  return { firewall: { cut, close } };
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
