import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describeBrowser } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { authorizeParams, pkcePair, registerClient } from './fixtures/flow.js';
import type { TestHost } from './fixtures/host.js';
import { ALICE, startHost } from './fixtures/host.js';

const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));

describeBrowser('login form in Chromium', (browser) => {
  let host: TestHost;
  let callbackServer: Server;
  let redirectUri: string;
  beforeAll(async () => {
    host = await startHost();
    // The client's redirect target: a local page, as a native app's loopback listener would be.
    callbackServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Signed in</h1>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    // Chromium still holds keep-alive connections here; close them or close() waits for them.
    callbackServer.closeAllConnections();
    await new Promise((resolve) => callbackServer.close(resolve));
    await host.close();
  });

  it('signs in through the form and lands on the redirect URI with code and state', async () => {
    const clientId = await registerClient(host.url, [redirectUri]);
    const state = 'browser-state <&>';
    const query = new URLSearchParams(
      authorizeParams(clientId, pkcePair().challenge, { redirect_uri: redirectUri, state }),
    );
    const page = await browser().newPage();
    const response = await page.goto(`${host.url}/oauth/authorize?${query}`);
    expect(response?.status()).toBe(200);
    expect(await page.textContent('#redirect-host')).toBe(new URL(redirectUri).host);
    await page.fill('#email', ALICE.email);
    await page.fill('#password', ALICE.password);
    await page.screenshot({ path: `${ARTIFACTS}oauth-login-form.png` });
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirectUri)),
      page.click('button[type=submit]'),
    ]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(landed.searchParams.get('state')).toBe(state);
    expect(landed.searchParams.get('iss')).toBe(host.url);
    expect(await page.textContent('h1')).toBe('Signed in');
    await page.screenshot({ path: `${ARTIFACTS}oauth-redirect.png` });
    await page.close();
  });

  it('shows the login error in the page after a wrong password', async () => {
    const clientId = await registerClient(host.url, [redirectUri]);
    const query = new URLSearchParams(
      authorizeParams(clientId, pkcePair().challenge, { redirect_uri: redirectUri }),
    );
    const page = await browser().newPage();
    await page.goto(`${host.url}/oauth/authorize?${query}`);
    await page.fill('#email', ALICE.email);
    await page.fill('#password', 'wrong password');
    await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
    expect(await page.textContent('#login-error')).toBe(
      'The e-mail address or password is incorrect.',
    );
    expect(new URL(page.url()).pathname).toBe('/oauth/authorize');
    await page.close();
  });
});
