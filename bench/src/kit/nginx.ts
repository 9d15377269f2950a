import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningProcess } from './fast-upstream.js';
import { freePort, waitForPort } from './ports.js';

/**
 * Debian's nginx, started from a generated configuration in a temp directory on an ephemeral
 * port, never as root: either answering every request itself (`return 200` with a fixed body,
 * the fastest upstream there is) or as a plain keep-alive reverse proxy (the reference for what
 * a proxy hop costs).
 */
export type NginxRole =
  | { kind: 'fixed'; body: string }
  | { kind: 'proxy'; upstreamUrl: string; workers: number };

// Debian's unprivileged account; used when the benchmark itself runs as root.
const NOBODY = 65534;

function nginxBinary(): string | undefined {
  return ['/usr/sbin/nginx', '/usr/bin/nginx'].find((candidate) => existsSync(candidate));
}

function location(role: NginxRole): string {
  if (role.kind === 'fixed') {
    if (role.body.includes("'")) throw new Error('the fixed body must not contain single quotes');
    return `default_type application/json;\n      return 200 '${role.body}';`;
  }
  return `proxy_pass http://upstream${new URL(role.upstreamUrl).pathname};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;`;
}

export interface NginxOptions {
  /**
   * A command nginx runs under, given nginx's own temp directory (writable by nginx), e.g.
   * `callgrindCommand`. nginx then runs as one process (no master), so the pid is the worker.
   */
  wrapper?: (dir: string) => string[];
}

export async function startNginx(
  role: NginxRole,
  options: NginxOptions = {},
): Promise<(RunningProcess & { dir: string; uid: number | undefined }) | undefined> {
  const binary = nginxBinary();
  if (binary === undefined) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'));
  const port = await freePort();
  const upstream =
    role.kind === 'proxy'
      ? `upstream upstream { server ${new URL(role.upstreamUrl).host}; keepalive 256; keepalive_requests 1000000; }`
      : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
${options.wrapper ? 'master_process off;' : ''}
worker_processes ${role.kind === 'proxy' ? role.workers : 1};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  ${upstream}
  server {
    listen 127.0.0.1:${port};
    location / {
      ${location(role)}
    }
  }
}
`,
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, NOBODY, NOBODY);
  // nginx writes to its own error.log; inheriting our stdio would keep pipes open after we exit.
  const [command, ...prefix] = [...(options.wrapper?.(dir) ?? []), binary];
  const nginxArgs = [...prefix, '-p', dir, '-c', join(dir, 'nginx.conf')];
  const child: ChildProcess = spawn(command as string, nginxArgs, {
    stdio: 'ignore',
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, options.wrapper ? 300_000 : 10_000);
  } catch (error) {
    const log = existsSync(join(dir, 'error.log'))
      ? readFileSync(join(dir, 'error.log'), 'utf8')
      : '';
    await stop();
    throw new Error(`nginx did not start: ${(error as Error).message}\n${log}`);
  }
  const uid = asRoot ? NOBODY : undefined;
  return { url: `http://127.0.0.1:${port}/mcp`, pid: child.pid as number, stop, dir, uid };
}
