import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { FIXTURE_ENV } from './fixture-api.js';

const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));
const REGISTER_SOURCES = fileURLToPath(new URL('./register-sources.mjs', import.meta.url));

/** Node arguments that run the `arazzo-mcp` command from its TypeScript sources. */
export const BIN_ARGS: readonly string[] = ['--import', 'tsx', '--import', REGISTER_SOURCES, BIN];

/**
 * `arazzo-mcp serve --transport stdio` over the fixture workflows file `arazzo`, its API at
 * `apiUrl` (startFixtureApi): what the SDK clients' stdio transports take.
 */
export function stdioServeParameters(arazzo: string, apiUrl: string) {
  return {
    command: process.execPath,
    args: [
      ...BIN_ARGS,
      'serve',
      '--transport',
      'stdio',
      '--arazzo',
      arazzo,
      '--source-server',
      `scim=${apiUrl}/scim2`,
    ],
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...FIXTURE_ENV },
    stderr: 'pipe' as const,
  };
}

/** Node arguments that run the built command (`npx tsc -b` first), as it is deployed. */
export const DIST_BIN_ARGS: readonly string[] = [
  fileURLToPath(new URL('../../dist/bin.js', import.meta.url)),
];

export interface ServedBin {
  /** Base URL (no `/mcp`). */
  url: string;
  child: ChildProcess;
  stdout(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** Runs `arazzo-mcp serve <args>` as a child process; resolves once it logs that it listens. */
export function spawnServe(
  args: readonly string[],
  env: Record<string, string>,
  bin: readonly string[] = BIN_ARGS,
): Promise<ServedBin> {
  const child = spawn(process.execPath, [...bin, 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  };
  return new Promise<ServedBin>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /"url":"(http:\/\/[^"]+)\/mcp","msg":"arazzo-mcp listening"/.exec(stdout);
      if (match?.[1]) resolve({ url: match[1], child, stdout: () => stdout, stop });
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
}
