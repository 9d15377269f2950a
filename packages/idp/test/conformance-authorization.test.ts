import { freePort, runAuthorizationConformance } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { createUserWithRole, fetchLoginForm, postLoginForm, startTestIdp } from './helpers.js';

describe('the MCP conformance suite’s authorization-server scenarios', async () => {
  const idp = await startTestIdp();
  const user = { userName: 'conformance-user', password: 'Pa55word!x' };
  await createUserWithRole(idp, user.userName, user.password, ['internal_user_mgt_list']);

  it('pass, the Client ID Metadata Document check included, with no warning', async () => {
    const port = await freePort();
    const registered = await fetch(`${idp.url}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [`http://127.0.0.1:${port}/callback`] }),
    });
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const { code, checks } = await runAuthorizationConformance({
      url: idp.issuer,
      clientId,
      port,
      signIn: async (url) => {
        const params = Object.fromEntries(new URL(url).searchParams);
        const login = await postLoginForm(idp, params, await fetchLoginForm(idp, params), user);
        return new URL(login.headers.get('location') ?? '');
      },
    });
    expect(checks.map((check) => check.id)).toContain('authorization-server-metadata-cimd');
    expect(checks.filter((check) => check.status !== 'SUCCESS')).toEqual([]);
    expect(code).toBe(0);
  }, 60_000);
});
