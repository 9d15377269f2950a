import type { BrowserSignInProvider } from '@mcp-identity/common/testing';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { BrowserContext } from 'playwright-core';
import { fetch as undiciFetch } from 'undici';
import { trustingAgent } from '../../src/stack/clients.js';

export const CLIENT_NAME = 'mcp-identity standard client test';

/**
 * The SDK client's user signing in at the IdP's login form in Chromium, through `Provider`:
 * common's `BrowserSignInProvider` for the SDK 1.x client, `Sdk2BrowserSignInProvider` for 2.x.
 */
export function idpBrowserLogin<P extends BrowserSignInProvider>(
  Provider: new (...args: ConstructorParameters<typeof BrowserSignInProvider>) => P,
  browser: () => BrowserContext,
  credentials: { userName: string; password: string },
  redirectUrl: string,
): P {
  return new Provider(browser, CLIENT_NAME, redirectUrl, async (page) => {
    await page.fill('input[name=username]', credentials.userName);
    await page.fill('input[name=password]', credentials.password);
    await page.click('button[type=submit]');
  });
}

/** Node's fetch trusting only the CA in `caFile` for HTTPS (what NODE_EXTRA_CA_CERTS gives a client). */
export function fetchTrustingCa(caFile: string): FetchLike {
  const dispatcher = trustingAgent(caFile);
  const trusting = (url: string | URL, init?: RequestInit) =>
    undiciFetch(url, { ...(init as object), dispatcher });
  return trusting as unknown as FetchLike;
}
