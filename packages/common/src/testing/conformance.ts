import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * The server scenarios of the official MCP conformance suite (@modelcontextprotocol/conformance)
 * that test the Streamable HTTP transport and the lifecycle, which every server of ours (and the
 * gateway in front of one) must pass whatever its tools.
 *
 * The others are not applicable:
 * - logging-set-level, completion-complete, resources-*, prompts-*: capabilities our servers do
 *   not declare (they declare only `tools`; MCP lifecycle: a client must not use undeclared
 *   capabilities), and which the gateway relays unchanged from its upstream.
 * - tools-call-*, json-schema-2020-12, elicitation-*, server-sse-polling: they call the suite's
 *   own fixture tools (`test_simple_text`, `test_reconnection`, …), which only its reference
 *   server has.
 * - server-stateless, caching, http-header-validation, http-custom-header-server-validation,
 *   sep-2164-resource-not-found, input-required-result-*: the 2026-07-28 revision, which this
 *   2025-era list does not run; servers that speak it (arazzo-mcp, the gateway) run the suite's
 *   `--spec-version 2026-07-28` scenarios in their own conformance tests.
 * - tasks-*, sep-2640-skills-*: extensions our servers do not implement.
 */
export const CONFORMANCE_SERVER_SCENARIOS = [
  'server-initialize',
  'server-session-lifecycle',
  'ping',
  'tools-list',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

const SUITE_MANIFEST = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/conformance/package.json',
);
const SUITE = join(dirname(SUITE_MANIFEST), 'dist', 'index.js');

const dataUrl = (source: string) => `data:text/javascript,${encodeURIComponent(source)}`;

// The suite imports `globSync` from 'fs', which Node 20 lacks and only its tier-check command
// uses. On Node 20 the suite's 'fs' resolves to node:fs plus a globSync that explains itself.
// Data: URLs, so nothing has to be copied next to the compiled module.
const FS_WITH_GLOB_SYNC = dataUrl(`
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() { throw new Error('fs.globSync needs Node 22 (conformance tier-check)'); }
`);

const SUITE_FS_HOOK = dataUrl(`
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') &&
      context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: ${JSON.stringify(FS_WITH_GLOB_SYNC)}, shortCircuit: true };
  }
  return next(specifier, context);
}
`);

/** Given to the suite with `node --import`. */
const NODE20_FS_SHIM = dataUrl(`
import fs from 'node:fs';
import { register } from 'node:module';
if (typeof fs.globSync !== 'function') register(${JSON.stringify(SUITE_FS_HOOK)});
`);

export interface ConformanceOptions {
  /** Working directory of the suite (where `--output-dir` is resolved). */
  cwd?: string;
  /** Also copy the suite's output to this process's stdout as it arrives. */
  verbose?: boolean;
}

export interface ConformanceRun {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Exit code and the whole output (stdout and stderr, uncoloured) once the suite has ended. */
  done: Promise<{ code: number | null; output: string }>;
  /** The output so far. */
  output(): string;
}

/** Starts the conformance suite's CLI with `args` (e.g. `server --url … --scenario …`). */
export function runConformance(args: string[], options: ConformanceOptions = {}): ConformanceRun {
  const child = spawn(process.execPath, ['--import', NODE20_FS_SHIM, SUITE, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: string) => {
    output += chunk;
    if (options.verbose) process.stdout.write(chunk);
  };
  child.stdout.setEncoding('utf8').on('data', collect);
  child.stderr.setEncoding('utf8').on('data', collect);
  const done = new Promise<{ code: number | null; output: string }>((resolve) => {
    // 'close', not 'exit': the output pipes may still hold the last lines when the process exits.
    child.once('close', (code) => resolve({ code, output }));
  });
  return { child, done, output: () => output };
}
