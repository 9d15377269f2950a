import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { heldPorts } from '../src/stack/port-check.js';
import { portArgs, runCli } from './support/cli-process.js';
import { freeStackPorts } from './support/stack-helpers.js';

const tempDir = useTempDir('cli-ports-');

/** Another process listening on `port` (loopback), until it is killed. */
async function holdPort(port: number) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:net').createServer().listen(${port}, '127.0.0.1', () => console.log('listening'))`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await once(child.stdout, 'data');
  return child;
}

describe('up on ports another process holds', () => {
  it('refuses before starting anything, naming the port, its purpose and the holder', async () => {
    const ports = await freeStackPorts();
    const holder = await holdPort(ports.gatewayManagement);
    try {
      const dataDir = join(tempDir(), 'stack');
      const up = await runCli(['up', '--data-dir', dataDir, ...portArgs(ports)], {
        cwd: tempDir(),
      });
      expect(up.code).not.toBe(0);
      expect(up.stderr).toContain('already in use (EADDRINUSE)');
      expect(up.stderr).toContain(
        `port ${ports.gatewayManagement} (gateway management): in use by pid ${holder.pid} (node`,
      );
      // Only the held port is named, and no service was started (nor its data directory made).
      expect(up.stderr).not.toContain(`port ${ports.idp} `);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      holder.kill();
      await once(holder, 'exit');
    }
  });

  it('finds none on free ports', async () => {
    expect(await heldPorts(await freeStackPorts())).toEqual([]);
  });
});
