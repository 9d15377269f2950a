import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename } from 'node:path';
import { StartupError } from '@mcp-identity/common';
import type { StackPorts } from './layout.js';

/** What each of the stack's ports is for, as the refusal names it. */
const PORT_NAMES: Record<keyof StackPorts, string> = {
  idp: 'identity provider',
  mcp: 'SCIM MCP server',
  gatewayHttps: 'gateway HTTPS',
  gatewayHttp: 'gateway plain HTTP',
  gatewayManagement: 'gateway management',
  areaA: 'Area A server',
};

/**
 * The loopback addresses a stack's clients reach: `localhost` may resolve to either, so a port
 * held on `::1` alone would still take this stack's traffic (and another stack's services would
 * answer its health checks as "ready").
 */
const LOOPBACK = ['127.0.0.1', '::1'];

export interface HeldPort {
  port: number;
  /** What the stack wanted it for. */
  purpose: string;
  /** `pid <n> (<command>)` of the listening process, when this system says. */
  holder?: string;
}

/** Whether binding `host:port` fails because something listens there (or on a wildcard). */
function held(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    // Any other failure (no IPv6 on this host, a privileged port) is not "held".
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/** Socket inodes LISTENing on `port` (Linux `/proc/net/tcp{,6}`: state 0A is LISTEN). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local?.endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9]) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/**
 * The process holding one of `inodes` open: the `/proc/<pid>/fd` links this user may read.
 * Only the program and its script are named, never the rest of its command line (which may
 * carry a password).
 */
function processHolding(inodes: Set<string>): string | undefined {
  if (inodes.size === 0) return undefined;
  const sockets = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        return sockets.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (holds) return `pid ${pid} (${commandOf(pid)})`;
  }
  return undefined;
}

function commandOf(pid: string): string {
  try {
    const [program = '', script] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const named = [basename(program)];
    if (script && !script.startsWith('-')) named.push(script);
    return named.join(' ');
  } catch {
    return 'command unknown';
  }
}

/** The stack's ports something else already listens on, each with its holder when known. */
export async function heldPorts(ports: StackPorts): Promise<HeldPort[]> {
  const found: HeldPort[] = [];
  for (const [key, port] of Object.entries(ports) as [keyof StackPorts, number][]) {
    if (port === 0) continue;
    const taken = await Promise.all(LOOPBACK.map((host) => held(port, host)));
    if (!taken.some(Boolean)) continue;
    const holder = processHolding(listeningInodes(port));
    found.push({ port, purpose: PORT_NAMES[key], ...(holder ? { holder } : {}) });
  }
  return found;
}

/**
 * Refuses to start a stack on ports something already holds (another stack, or anything), before
 * any service starts: otherwise the other stack's services answer this one's health checks and
 * the failure comes later as a management 401, never as the port conflict it is.
 */
export async function refuseHeldPorts(ports: StackPorts, dataDir: string): Promise<void> {
  const taken = await heldPorts(ports);
  if (taken.length === 0) return;
  const lines = taken.map(
    (h) => `  port ${h.port} (${h.purpose}): in use${h.holder ? ` by ${h.holder}` : ''}`,
  );
  throw new StartupError(
    `Ports this stack needs are already in use (EADDRINUSE):\n${lines.join('\n')}\n` +
      `Another stack? "mcp-identity status --data-dir <its data directory>" shows it and "down" stops it; ` +
      `or start this one (${dataDir}) on other ports ("mcp-identity up --help" lists the port options).`,
  );
}
