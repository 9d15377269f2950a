import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import { postgresBinDir } from './executables.js';
import { onFreePort, type ServiceProcess, startServiceProcess } from './service-process.js';

/** PostgreSQL refuses to run as root; as root, the throwaway cluster belongs to this user. */
const POSTGRES_OS_USER = process.env.POSTGRES_TEST_USER ?? 'postgres';

interface OsUser {
  uid: number;
  gid: number;
}

function osUser(name: string): OsUser | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}

const runningAsRoot = () => process.getuid?.() === 0;

/** Why throwaway PostgreSQL servers cannot be started here, or undefined when they can. */
export function postgresMissing(): string | undefined {
  if (!postgresBinDir()) {
    return "PostgreSQL server binaries not found (install Debian's postgresql, or set POSTGRES_BIN_DIR)";
  }
  if (runningAsRoot() && !osUser(POSTGRES_OS_USER)) {
    return `running as root and there is no '${POSTGRES_OS_USER}' user to run PostgreSQL (set POSTGRES_TEST_USER)`;
  }
  return undefined;
}

export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  url: string;
  port: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): string;
  /** Fast shutdown: open sessions are terminated, as when a database server goes away. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port with the same data. */
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

/**
 * A throwaway PostgreSQL cluster: `initdb` in a temporary directory, the server on an ephemeral
 * loopback port with its unix socket in that directory, tuned for tests (no fsync).
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new NotFoundError(postgresMissing());
  const owner = runningAsRoot() ? osUser(POSTGRES_OS_USER) : undefined;
  if (runningAsRoot() && !owner) throw new NotFoundError(postgresMissing());
  const root = mkdtempSync(join(tmpdir(), 'mcp-identity-pg-'));
  const dataDir = join(root, 'data');
  const socketDir = join(root, 'socket');
  mkdirSync(socketDir);
  if (owner) {
    chownSync(root, owner.uid, owner.gid);
    chownSync(socketDir, owner.uid, owner.gid);
  }
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};
  execFileSync(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
    { ...asOwner, stdio: 'pipe', env: { ...process.env, LC_ALL: 'C' } },
  );

  let server: ServiceProcess | undefined;
  const launch = (port: number) =>
    startServiceProcess({
      name: 'postgres',
      command: join(bin, 'postgres'),
      args: [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-k',
        socketDir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=100',
      ],
      ready: /database system is ready to accept connections/,
      ...asOwner,
    });
  const port = await onFreePort(async (candidate) => {
    server = await launch(candidate);
    return candidate;
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name))
        throw new InvalidArgumentError(`not a plain database name: ${name}`);
      execFileSync(
        join(bin, 'createdb'),
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name],
        { stdio: 'pipe' },
      );
      return url.replace(/\/postgres$/, `/${name}`);
    },
    async stop() {
      await server?.stop('SIGINT');
      server = undefined;
    },
    async start() {
      if (server) return;
      server = await launch(port);
    },
    async close() {
      await server?.stop('SIGINT');
      server = undefined;
      rmSync(root, { recursive: true, force: true });
    },
  };
}
