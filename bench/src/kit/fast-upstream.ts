import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The tool every gateway benchmark calls. */
export const TOOL_NAME = 'search_users';
const TOOL_CALL_PARAMS = { name: TOOL_NAME, arguments: { filter: 'userName sw a', count: 5 } };

/** The request every gateway benchmark sends, and the fixed answer of the fast upstreams. */
export const TOOL_CALL_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: TOOL_CALL_PARAMS,
});
/**
 * The same call as an MCP 2026-07-28 request: the version and the client's capabilities in
 * `_meta` (basic/index, "Per-request protocol fields"), sent with `MODERN_MCP_HEADERS`.
 */
export const MODERN_TOOL_CALL_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    ...TOOL_CALL_PARAMS,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
});
export const TOOL_RESULT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  result: { content: [{ type: 'text', text: 'found 0 users' }], isError: false },
});

export interface RunningProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts one of the kit's servers as its own process, so it never shares an event loop. */
async function spawnKitServer(file: string, args: string[] = []): Promise<RunningProcess> {
  const entry = fileURLToPath(new URL(file, import.meta.url));
  // tsx runs the TypeScript entry, whether the caller itself runs under tsx (a bench) or not (a test).
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const [line] = (await Promise.race([
    once(createInterface({ input: child.stdout as NodeJS.ReadableStream }), 'line'),
    exited.then(() => {
      throw new Error(`${file} exited before listening`);
    }),
  ])) as [string];
  return {
    url: line,
    pid: child.pid as number,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts `fast-upstream-server.ts`: the fixed `tools/call` answer. */
export function spawnFastUpstream(): Promise<RunningProcess> {
  return spawnKitServer('./fast-upstream-server.ts');
}

/**
 * Starts `node-proxy-server.ts` in front of `upstreamUrl`: the floor of a Node.js proxy, as one
 * process or as `workers` cluster workers.
 */
export function spawnNodeProxy(upstreamUrl: string, workers = 1): Promise<RunningProcess> {
  return spawnKitServer('./node-proxy-server.ts', [upstreamUrl, String(workers)]);
}

/** Starts `tcp-relay-server.ts` in front of `upstreamUrl`: bytes relayed, no HTTP read. */
export function spawnTcpRelay(upstreamUrl: string): Promise<RunningProcess> {
  return spawnKitServer('./tcp-relay-server.ts', [upstreamUrl]);
}

/** Starts `bare-http-relay-server.ts` in front of `upstreamUrl`: HTTP framing by hand, no checks. */
export function spawnBareHttpRelay(upstreamUrl: string): Promise<RunningProcess> {
  return spawnKitServer('./bare-http-relay-server.ts', [upstreamUrl]);
}
