import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import { findExecutable } from './executables.js';
import { onFreePort, type ServiceProcess, startServiceProcess } from './service-process.js';

/** Why a throwaway nginx cannot be started here, or undefined when it can. */
export function nginxMissing(): string | undefined {
  return findExecutable('nginx') ? undefined : "nginx not found (install Debian's nginx)";
}

export interface LoadBalancerOptions {
  /** `host:port` of every backend; requests are spread round-robin over them. */
  backends: string[];
  /** nginx worker processes (default 1). */
  workers?: number;
}

export interface TestLoadBalancer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Stops nginx and removes its directory. */
  close(): Promise<void>;
}

function config(dir: string, port: number, options: LoadBalancerOptions): string {
  const servers = options.backends
    .map((backend) => `    server ${backend} max_fails=1 fail_timeout=5s;`)
    .join('\n');
  const temp = (name: string) => `${name}_temp_path ${join(dir, 'temp', name)};`;
  // Streaming MCP responses (SSE) must pass through unbuffered; a backend that refuses the
  // connection (a lost instance) is skipped and the request goes to the next one.
  return `worker_processes ${options.workers ?? 1};
pid ${join(dir, 'nginx.pid')};
error_log stderr notice;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  ${temp('client_body')}
  ${temp('proxy')}
  ${temp('fastcgi')}
  ${temp('uwsgi')}
  ${temp('scgi')}
  upstream backends {
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 8m;
    location / {
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout;
      proxy_connect_timeout 2s;
    }
  }
}
`;
}

/** nginx on an ephemeral loopback port as a round-robin HTTP load balancer, from a generated config. */
export async function startLoadBalancer(options: LoadBalancerOptions): Promise<TestLoadBalancer> {
  const binary = findExecutable('nginx');
  if (!binary) throw new NotFoundError(nginxMissing());
  if (options.backends.length === 0)
    throw new InvalidArgumentError('a load balancer needs backends');
  const dir = mkdtempSync(join(tmpdir(), 'mcp-identity-nginx-'));
  mkdirSync(join(dir, 'temp'));
  let server: ServiceProcess | undefined;
  const port = await onFreePort(async (candidate) => {
    const file = join(dir, 'nginx.conf');
    writeFileSync(file, config(dir, candidate, options));
    server = await startServiceProcess({
      name: 'nginx',
      command: binary,
      args: ['-p', dir, '-c', file, '-e', 'stderr'],
      ready: /start worker process/,
    });
    return candidate;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async close() {
      // QUIT is nginx's graceful shutdown: workers finish their requests first.
      await server?.stop('SIGQUIT');
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
