import { loginFormFields, obtainTokenWithLoginForm } from '@mcp-identity/oauth';
import { describe, expect, it } from 'vitest';
import { ALICE, hostForSuite } from './fixtures/host.js';

describe('the headless login client', () => {
  const host = hostForSuite();

  it('runs registration, the login form, PKCE and the exchange to a token /mcp accepts', async () => {
    const tokens = await obtainTokenWithLoginForm(host.url, ALICE);
    expect(tokens.clientId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(tokens.refreshToken).toEqual(expect.any(String));
    const response = await fetch(`${host.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(200);
  });

  it('says the login was not accepted when the password is wrong', async () => {
    await expect(
      obtainTokenWithLoginForm(host.url, { email: ALICE.email, password: 'wrong-password' }),
    ).rejects.toThrow('the login was not accepted (HTTP 200)');
  });

  it('decodes the hidden inputs as a browser submits them', () => {
    const html =
      '<input type="hidden" name="state" value="a&amp;b&lt;&quot;c&#39;"><input type="hidden" name="csrf" value="t">';
    expect(loginFormFields(html)).toEqual({ state: `a&b<"c'`, csrf: 't' });
  });
});
