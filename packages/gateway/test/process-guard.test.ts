import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const src = (file: string) =>
  pathToFileURL(fileURLToPath(new URL(`../src/${file}`, import.meta.url))).href;

describe('process guard', () => {
  it('keeps the process alive through an escaped exception and rejection, logging and counting both', () => {
    const script = `
      import { createLogger } from '@mcp-identity/common';
      import { installProcessGuard } from ${JSON.stringify(src('process-guard.ts'))};
      import { GatewayMetrics } from ${JSON.stringify(src('metrics.ts'))};
      const metrics = new GatewayMetrics();
      installProcessGuard(createLogger({ level: 'error', pretty: false }), metrics);
      setTimeout(() => { throw new Error('escaped exception'); }, 1);
      setTimeout(() => { void Promise.reject(new Error('escaped rejection')); }, 2);
      setTimeout(async () => {
        const text = await metrics.render();
        process.stdout.write(text.split('\\n').filter((l) => l.startsWith('mcp_gateway_uncaught')).join('\\n') + '\\nSTILL ALIVE\\n');
      }, 50);
    `;
    const result = spawnSync(
      process.execPath,
      ['--import', TSX, '--input-type=module', '-e', script],
      {
        encoding: 'utf8',
        timeout: 15_000,
        cwd: fileURLToPath(new URL('..', import.meta.url)),
      },
    );
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('mcp_gateway_uncaught_errors_total{kind="exception"} 1');
    expect(result.stdout).toContain('mcp_gateway_uncaught_errors_total{kind="rejection"} 1');
    expect(result.stdout).toContain('uncaught error contained');
    expect(result.stdout).toContain('STILL ALIVE');
  });
});
