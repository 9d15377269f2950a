import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  describeBrowser,
  describeRequiring,
  inspectorMissing,
  startInspector,
  type TestInspector,
  useTempDir,
} from '@mcp-identity/common/testing';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { INSPECTOR_VERSION, inspectorConfiguration } from '../src/connect.js';
import type { StackLayout } from '../src/stack/layout.js';
import type { StackSecrets } from '../src/stack/secrets.js';
import type { RunningStack } from '../src/stack/start.js';
import { startQuietStack } from './support/stack-helpers.js';

// `up`'s whole stack (the packages' dist/bin.js: run `npx tsc -b` first) and MCP Inspector's web
// UI from tools/inspector, started with the `--config` file `mcp-identity connect inspector`
// prints: each server is known to Inspector by its URL only. Inspector's backend runs the OAuth
// flow (discovery, registration, token) and trusts the stack's CA as the printed command says.
const STACK_MS = 120_000;
const tempDir = useTempDir('cli-inspector-');
let stack: RunningStack;
let inspector: TestInspector;

interface Endpoint {
  server: string;
  mcpUrl(layout: StackLayout): string;
  authorizationEndpoint(layout: StackLayout): string;
  signIn(page: Page, secrets: StackSecrets): Promise<void>;
  /** A tool the signed-in user's scopes do not cover, which the endpoint's lists leave out. */
  hidden?: string;
}

const AREA_A: Endpoint = {
  server: 'scim-area-a',
  mcpUrl: (layout) => layout.areaA.mcpUrl,
  authorizationEndpoint: (layout) => `${layout.areaA.url}/oauth/authorize`,
  async signIn(page, { areaAccount }) {
    await page.fill('#email', areaAccount.email);
    await page.fill('#password', areaAccount.password);
    await page.click('button[type=submit]');
  },
};

const GATEWAY: Endpoint = {
  server: 'scim-gateway',
  mcpUrl: (layout) => layout.gateway.mcpUrl,
  authorizationEndpoint: (layout) => `${layout.idp.url}/oauth2/authorize`,
  async signIn(page, { readOnlyUser }) {
    await page.fill('input[name=username]', readOnlyUser.userName);
    await page.fill('input[name=password]', readOnlyUser.password);
    await page.click('button[type=submit]');
  },
  // The proxy filters lists by the caller's permission: the read-only user is not offered it.
  hidden: 'delete_user',
};

describeRequiring('MCP Inspector’s web UI', inspectorMissing(), () => {
  beforeAll(async () => {
    stack = await startQuietStack(join(tempDir(), 'data'));
    const configFile = join(tempDir(), 'inspector.json');
    writeFileSync(configFile, JSON.stringify(inspectorConfiguration(stack.layout)));
    inspector = await startInspector({ configFile, extraCaFile: stack.layout.caFile });
  }, STACK_MS);

  afterAll(async () => {
    await inspector?.close();
    await stack?.stop();
  }, STACK_MS);

  it('is the release `mcp-identity connect inspector` names', () => {
    expect(inspector.version).toBe(INSPECTOR_VERSION);
  });

  describeBrowser(
    'in Chromium',
    (browser) => {
      it.each([
        ['Area A', AREA_A],
        [
          'the gateway (its read-only user is not offered delete_user, which its role may not call)',
          GATEWAY,
        ],
      ])(
        'connects to %s through OAuth (registration, state, PKCE, resource, login), lists the tools and runs search_users',
        async (_name, endpoint) => {
          const { layout, secrets } = stack;
          const mcpUrl = endpoint.mcpUrl(layout);
          const page = await browser().newPage();
          try {
            await page.goto(inspector.url);
            const authorizationRequest = page.waitForRequest(
              (request) =>
                request.isNavigationRequest() &&
                request.url().startsWith(`${endpoint.authorizationEndpoint(layout)}?`),
            );
            await page
              .getByRole('switch', { name: `Connect or disconnect "${endpoint.server}"` })
              .click({ force: true });

            // Inspector registered itself and sends the user to the server's authorization
            // server with everything our authorization endpoints require.
            const authorization = new URL((await authorizationRequest).url());
            const parameters = authorization.searchParams;
            expect(parameters.get('client_id')).toEqual(expect.any(String));
            expect(parameters.get('redirect_uri')).toBe(`${inspector.origin}/oauth/callback`);
            expect(parameters.get('state')).toMatch(/^\S{16,}$/);
            expect(parameters.get('code_challenge_method')).toBe('S256');
            expect(parameters.get('resource')).toBe(mcpUrl);

            await page.waitForLoadState();
            await endpoint.signIn(page, secrets);
            await page.waitForURL((url) => url.origin === inspector.origin);

            // Back in Inspector with a token: it connects and lists the server's tools.
            await page.locator('label', { hasText: /^Tools$/ }).click();
            await page.getByText(/^Tools \(\d+\)$/).waitFor();
            const listed = [
              'search_users',
              'get_user',
              ...(endpoint.hidden ? [] : ['delete_user']),
            ];
            for (const tool of listed) await page.getByText(tool, { exact: true }).waitFor();
            if (endpoint.hidden) {
              expect(await page.getByText(endpoint.hidden, { exact: true }).count()).toBe(0);
            }

            await page.getByText('search_users', { exact: true }).click();
            await page.getByRole('textbox', { name: 'count' }).fill('1');
            await page.getByRole('textbox', { name: 'filter' }).fill('userName eq alice');
            await page.getByRole('button', { name: 'Execute Tool' }).click();
            await page.getByText("'userName': 'alice'").first().waitFor();
          } catch (error) {
            throw new Error(`${(error as Error).message}\nInspector:\n${inspector.output()}`);
          } finally {
            await page.close();
          }
        },
        STACK_MS,
      );
    },
    () => ({
      trustedCertificates: [stack.layout.idp.certFile],
    }),
  );
});
