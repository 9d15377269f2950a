import { BrowserSignInProvider } from '@mcp-identity/common/testing';
import type { LoginCredentials } from '@mcp-identity/oauth';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { BrowserContext } from 'playwright-core';

export const CLIENT_NAME = 'arazzo-mcp test client';

/**
 * The SDK client's user signing in at Area A's login form in Chromium; it also records the
 * client name the login page showed and where the browser landed.
 */
export class BrowserLoginProvider extends BrowserSignInProvider {
  /** What the login page showed as the client's name. */
  shownClientName: string | null = null;
  /** The redirect back to the client, whose query (`code`, `state`, `iss`) SDK 2.x reads. */
  landed: URL | undefined;

  constructor(browser: () => BrowserContext, credentials: LoginCredentials, redirectUrl: string) {
    super(browser, CLIENT_NAME, redirectUrl, async (page) => {
      this.shownClientName = await page.textContent('#client-name');
      await page.fill('#email', credentials.email);
      await page.fill('#password', credentials.password);
      await page.click('button[type=submit]');
    });
  }

  #discovery: OAuthDiscoveryState | undefined;

  /**
   * SDK 2.x records the authorization server discovery found before the redirect, and checks
   * that the code is redeemed there (SEP-2352).
   */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discovery;
  }

  protected override async signInAt(url: URL): Promise<URL> {
    this.landed = await super.signInAt(url);
    return this.landed;
  }
}
