import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findExecutable } from '@mcp-identity/common/testing';

const exec = promisify(execFile);

/** The repository root: the build context and compose.yaml's directory. */
export const ROOT = new URL('../../../', import.meta.url).pathname;

/** Why the container tests cannot run here, or undefined when they can. */
export function containerToolsMissing(): string | undefined {
  const missing = ['podman', 'podman-compose', 'runc', 'debootstrap'].filter(
    (tool) => !findExecutable(tool),
  );
  return missing.length === 0
    ? undefined
    : `${missing.join(', ')} not found (Debian: apt-get install podman runc debootstrap podman-compose)`;
}

/**
 * A containers.conf for this test's podman and podman-compose alone (CONTAINERS_CONF), so
 * nothing on the machine changes: runc, since crun refuses cgroups v1 hybrid hosts, and
 * ulimits a process without CAP_SYS_RESOURCE may set (podman's defaults raise them, and fail).
 */
export function podmanEnvironment(dir: string): NodeJS.ProcessEnv {
  const file = join(dir, 'containers.conf');
  writeFileSync(
    file,
    [
      '[containers]',
      'default_ulimits = ["nofile=16384:16384", "nproc=4096:4096"]',
      '[engine]',
      'runtime = "runc"',
      '',
    ].join('\n'),
  );
  return { ...process.env, CONTAINERS_CONF: file };
}

/** Runs a command to its end; its stdout. A failure carries the command's stderr. */
export async function run(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<string> {
  try {
    const { stdout } = await exec(command, args, {
      cwd: ROOT,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(
      `${command} ${args.join(' ')} failed: ${(error as Error).message}\n${String(stdout ?? '').slice(-4000)}\n${String(stderr ?? '').slice(-4000)}`,
    );
  }
}

/** Progress on stderr, with the seconds it took: vitest shows it as the test runs. */
export async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  process.stderr.write(`[container] ${what}…\n`);
  const started = performance.now();
  const result = await work();
  process.stderr.write(
    `[container] ${what}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return result;
}
