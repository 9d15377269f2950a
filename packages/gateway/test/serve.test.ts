import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { useTempDir } from '@mcp-identity/common/testing';
import { resolveConfig } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, writeGatewayConfig } from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-serve-');

/** An address of this machine that is not loopback, if it has one. */
function externalAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (!address.internal && address.family === 'IPv4') return address.address;
    }
  }
  return undefined;
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('gateway serve', () => {
  it('binds loopback unless listeners.host says otherwise, and logs the configuration in use', async () => {
    expect(resolveConfig({}).host).toBe('127.0.0.1');
    const gateway = await startGatewayProcess(
      await writeGatewayConfig(tempDir(), { defaultHost: true }),
    );
    try {
      expect(gateway.started.host).toBe('127.0.0.1');
      expect(gateway.started.configuration).toBe(gateway.configFile);
      const port = Number(new URL(gateway.plainUrl).port);
      expect(await reachable('127.0.0.1', port)).toBe(true);
      const external = externalAddress();
      if (external) expect(await reachable(external, port)).toBe(false);
    } finally {
      await gateway.stop();
    }
  });
});
