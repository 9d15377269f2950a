import type { LoginCredentials } from '@mcp-identity/oauth';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { BrowserContext } from 'playwright-core';

export const CLIENT_NAME = 'arazzo-mcp test client';

/**
 * An SDK OAuth client provider whose user signs in in Chromium: the login page is opened,
 * the client name it shows is recorded, the form is filled and submitted, and the browser
 * lands on `redirectUrl` (a real loopback listener, as a native client's would be). It keeps
 * what the SDK hands it so the test can inspect it.
 */
export class BrowserLoginProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  current: OAuthTokens | undefined;
  authorizationUrls: URL[] = [];
  code: string | undefined;
  /** What the login page showed as the client's name. */
  shownClientName: string | null = null;
  #verifier = '';
  #state = '';

  constructor(
    private readonly browser: () => BrowserContext,
    private readonly credentials: LoginCredentials,
    readonly redirectUrl: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: CLIENT_NAME,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    this.#state = crypto.randomUUID();
    return this.#state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.current;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.current = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    return this.#verifier;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrls.push(url);
    const page = await this.browser().newPage();
    try {
      const response = await page.goto(url.href);
      if (response?.status() !== 200) throw new Error(`login page answered ${response?.status()}`);
      this.shownClientName = await page.textContent('#client-name');
      await page.fill('#email', this.credentials.email);
      await page.fill('#password', this.credentials.password);
      await Promise.all([
        page.waitForURL((landed) => landed.href.startsWith(this.redirectUrl)),
        page.click('button[type=submit]'),
      ]);
      const landed = new URL(page.url());
      if (landed.searchParams.get('state') !== this.#state) throw new Error('state mismatch');
      this.code = landed.searchParams.get('code') ?? undefined;
    } finally {
      await page.close();
    }
  }
}
