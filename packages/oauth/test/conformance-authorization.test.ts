import { freePort, runAuthorizationConformance } from '@mcp-identity/common/testing';
import { submitLoginForm } from '@mcp-identity/oauth';
import { describe, expect, it } from 'vitest';
import { registerClient } from './fixtures/flow.js';
import { ALICE, hostForSuite } from './fixtures/host.js';

describe('the MCP conformance suite’s authorization-server scenarios', () => {
  const host = hostForSuite();

  it('pass, the Client ID Metadata Document check included, with no warning', async () => {
    const port = await freePort();
    const clientId = await registerClient(host.url, [`http://127.0.0.1:${port}/callback`]);
    const { code, checks } = await runAuthorizationConformance({
      url: host.url,
      clientId,
      port,
      resource: `${host.url}/mcp`,
      signIn: (url) => submitLoginForm(url, ALICE),
    });
    expect(checks.map((check) => check.id)).toContain('authorization-server-metadata-cimd');
    expect(checks.filter((check) => check.status !== 'SUCCESS')).toEqual([]);
    expect(code).toBe(0);
  }, 60_000);
});
