import type { OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { BrowserContext, Page } from 'playwright-core';
import { UnexpectedResponseError } from '../errors.js';

/**
 * The plumbing of an MCP SDK OAuth client provider that plays a public client (PKCE, no
 * secret) with one redirect URI and sends `state`: it keeps everything the SDK hands over,
 * so a test can inspect it. A subclass only says how the user signs in at the authorization
 * URL (`signInAt`, resolving with the URL the authorization server redirected to); the code
 * is kept once that redirect carries the `state` sent.
 */
export abstract class SignInClientProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  current: OAuthTokens | undefined;
  /** Every token set the SDK saved, in order. */
  savedTokens: OAuthTokens[] = [];
  authorizationUrls: URL[] = [];
  /** The last redirect back to the client, whose query (`code`, `state`, `iss`) SDK 2.x reads. */
  landed: URL | undefined;
  code: string | undefined;
  #verifier = '';
  #state = '';

  constructor(
    private readonly clientName: string,
    readonly redirectUrl: string,
  ) {}

  protected abstract signInAt(authorizationUrl: URL): Promise<URL>;

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
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
    this.savedTokens.push(tokens);
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    return this.#verifier;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrls.push(url);
    this.code = undefined;
    const landed = await this.signInAt(url);
    this.landed = landed;
    if (landed.searchParams.get('state') !== this.#state)
      throw new UnexpectedResponseError('state mismatch');
    this.code = landed.searchParams.get('code') ?? undefined;
  }
}

/**
 * A provider whose user signs in in Chromium, as a desktop client's user would: `signIn`
 * fills the authorization server's own login form on the opened page; the browser then lands
 * on `redirectUrl` (a real listener).
 */
export class BrowserSignInProvider extends SignInClientProvider {
  constructor(
    private readonly browser: () => BrowserContext,
    clientName: string,
    redirectUrl: string,
    private readonly signIn: (page: Page) => Promise<void>,
  ) {
    super(clientName, redirectUrl);
  }

  protected async signInAt(url: URL): Promise<URL> {
    const page = await this.browser().newPage();
    try {
      const response = await page.goto(url.href);
      if (response?.status() !== 200)
        throw new UnexpectedResponseError(`login page answered ${response?.status()}`);
      await Promise.all([
        page.waitForURL((landed) => landed.href.startsWith(this.redirectUrl)),
        this.signIn(page),
      ]);
      return new URL(page.url());
    } finally {
      await page.close();
    }
  }
}

/**
 * The browser sign-in for an SDK 2.x client, which also keeps the authorization server that
 * discovery found before the redirect: SDK 2.x checks that the code is redeemed there
 * (SEP-2352).
 */
export class Sdk2BrowserSignInProvider extends BrowserSignInProvider {
  #discovery: OAuthDiscoveryState | undefined;

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discovery;
  }
}
