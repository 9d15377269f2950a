import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApp, createLogger, type RunningServer } from '@mcp-identity/common';
import {
  type ClientMetadataServer,
  describeBrowser,
  metricValue,
  Sdk2BrowserSignInProvider,
  startClientMetadataServer,
  startTestServer,
  useTempDir,
} from '@mcp-identity/common/testing';
import {
  Client,
  StreamableHTTPClientTransport as Transport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clientCredentialsToken } from '../src/stack/clients.js';
import type { RunningStack } from '../src/stack/start.js';
import { fetchTrustingCa } from './support/sdk-login.js';
import { startQuietStack } from './support/stack-helpers.js';

// Issue 40: the SDK 2.4 client whose `client_id` is the URL of its Client ID Metadata Document
// (draft-ietf-oauth-client-id-metadata-document; MCP 2026-07-28), connecting by URL alone to
// `up`'s whole stack (the packages' dist/bin.js: run `npx tsc -b` first). The document is
// served over HTTPS by a certificate of the stack's own CA, from 127.0.0.1: the stack runs with
// the development allowance for private addresses.
const STACK_MS = 120_000;
const CLIENT = { name: 'client-document-e2e', version: '1.0.0' };
const CLIENT_NAME = 'Desk MCP Client';
const DOCUMENT_PATH = '/clients/desk.json';
const tempDir = useTempDir('cli-client-document-');
let stack: RunningStack;
let callback: RunningServer;
let documents: ClientMetadataServer;
let documentUrl: string;

beforeAll(async () => {
  stack = await startQuietStack(join(tempDir(), 'data'), {
    clientMetadataAllowPrivateAddresses: true,
  });
  documents = await startClientMetadataServer({ caDir: stack.layout.dataDir });
  // The client's redirect target: a real loopback listener, as a native client's would be.
  const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
  app.get('/callback', (_request, reply) => reply.type('text/html').send('<h1>Signed in</h1>'));
  callback = await startTestServer(app);
  documentUrl = documents.publish(DOCUMENT_PATH, {
    name: CLIENT_NAME,
    redirectUri: `${callback.url}/callback`,
  });
}, STACK_MS);

afterAll(async () => {
  await callback?.close();
  await documents?.close();
  await stack?.stop();
}, STACK_MS);

/** What the login page showed the user, one entry per time it was opened. */
interface LoginPageSeen {
  clientName: string | null;
  documentHost: string | null;
}

/**
 * An SDK 2.x provider whose `client_id` is its document's URL (`clientMetadataUrl`: the SDK
 * uses it instead of registering when the server advertises
 * `client_id_metadata_document_supported`); its user signs in in Chromium, and every login page
 * opened is kept.
 */
class DocumentClientProvider extends Sdk2BrowserSignInProvider {
  readonly loginPages: LoginPageSeen[] = [];

  constructor(
    browser: ConstructorParameters<typeof Sdk2BrowserSignInProvider>[0],
    readonly clientMetadataUrl: string,
    form: { user: string; userField: string; password: string },
  ) {
    super(browser, CLIENT_NAME, `${callback.url}/callback`, async (page: Page) => {
      this.loginPages.push({
        clientName: await page.textContent('#client-name'),
        documentHost: await page.textContent('#client-host'),
      });
      await page.fill(`input[name=${form.userField}]`, form.user);
      await page.fill('input[name=password]', form.password);
      await page.click('button[type=submit]');
    });
  }
}

/** The IdP's `/metrics`, read with a client-credentials token holding its scope. */
async function idpMetrics(): Promise<string> {
  const { accessToken } = await clientCredentialsToken(stack.layout, stack.secrets.clientApp, [
    'internal_metrics_view',
  ]);
  const response = await fetchTrustingCa(stack.layout.caFile)(`${stack.layout.idp.url}/metrics`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** Area A's request log lines (pino JSON) whose URL starts with `path`. */
function areaARequests(path: string): number {
  const log = readFileSync(join(stack.layout.logDir, 'area-a.log'), 'utf8');
  return log
    .split('\n')
    .filter((line) => line.includes('"incoming request"'))
    .filter((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url?.startsWith(path))
    .length;
}

/**
 * The SDK client's whole first connection: the server's 401, discovery, the user signing in at
 * the authorization server (no registration: the document's URL is the client_id), the code
 * redeemed, then `tools/list` and `search_users` finding alice.
 */
async function connectByUrlAlone(mcpUrl: URL, provider: DocumentClientProvider): Promise<Client> {
  const fetch = fetchTrustingCa(stack.layout.caFile);
  const probe = new Client(CLIENT);
  await expect(
    probe.connect(new Transport(mcpUrl, { authProvider: provider, fetch })),
  ).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.client?.client_id).toBe(documentUrl);
  expect(provider.authorizationUrls[0]?.searchParams.get('client_id')).toBe(documentUrl);

  const transport = new Transport(mcpUrl, { authProvider: provider, fetch });
  await transport.finishAuth(provider.landed?.searchParams ?? new URLSearchParams());
  const client = new Client(CLIENT);
  await client.connect(transport);
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name)).toContain('search_users');
  const found = await client.callTool({
    name: 'search_users',
    arguments: { filter: 'userName eq alice', count: 1 },
  });
  expect(found.isError).toBe(false);
  expect(found.structuredContent).toMatchObject({ users: [{ userName: 'alice' }] });
  return client;
}

describeBrowser(
  'the SDK 2.4 client with a Client ID Metadata Document, given only a URL',
  (browser) => {
    const readOnlyUser = () => ({
      user: stack.secrets.readOnlyUser.userName,
      userField: 'username',
      password: stack.secrets.readOnlyUser.password,
    });

    it(
      "through the gateway's SCIM proxy: the IdP fetches the document instead of a registration, its login page names the client and the document's host",
      async () => {
        const fetchedBefore = documents.requests(DOCUMENT_PATH);
        const provider = new DocumentClientProvider(browser, documentUrl, readOnlyUser());
        const client = await connectByUrlAlone(new URL(stack.layout.gateway.mcpUrl), provider);
        await client.close();

        expect(provider.authorizationUrls[0]?.origin).toBe(stack.layout.idp.url);
        expect(provider.loginPages).toEqual([
          { clientName: CLIENT_NAME, documentHost: new URL(documents.origin).host },
        ]);
        expect(documents.requests(DOCUMENT_PATH)).toBeGreaterThan(fetchedBefore);
        // The IdP answered the login page and the token request, and no registration.
        const metrics = await idpMetrics();
        const served = (method: string, route: string, status: number) =>
          metricValue(
            metrics,
            `idp_http_requests_total{method="${method}",route="${route}",status="${status}"}`,
          );
        expect(served('GET', '/oauth2/authorize', 200)).toBeGreaterThan(0);
        expect(served('POST', '/oauth2/token', 200)).toBeGreaterThan(0);
        expect(metrics).not.toMatch(/idp_http_requests_total\{[^}]*route="\/oauth2\/register"/);
      },
      STACK_MS,
    );

    it(
      "to Area A's /mcp: Area A fetches the document instead of a registration, its login page names the client and the document's host",
      async () => {
        const fetchedBefore = documents.requests(DOCUMENT_PATH);
        const provider = new DocumentClientProvider(browser, documentUrl, {
          user: stack.secrets.areaAccount.email,
          userField: 'email',
          password: stack.secrets.areaAccount.password,
        });
        const client = await connectByUrlAlone(new URL(stack.layout.areaA.mcpUrl), provider);
        await client.close();

        expect(provider.authorizationUrls[0]?.origin).toBe(stack.layout.areaA.url);
        expect(provider.loginPages).toEqual([
          { clientName: CLIENT_NAME, documentHost: new URL(documents.origin).host },
        ]);
        // Area A keeps its own cache of documents: it fetched the document itself.
        expect(documents.requests(DOCUMENT_PATH)).toBeGreaterThan(fetchedBefore);
        expect(areaARequests('/oauth/authorize')).toBeGreaterThan(0);
        expect(areaARequests('/oauth/token')).toBeGreaterThan(0);
        expect(areaARequests('/oauth/register')).toBe(0);
      },
      STACK_MS,
    );

    it(
      'step-up that ends: the read-only user asked for a scope their role lacks signs in once more, then the client gets an error naming the scope',
      async () => {
        const mcpUrl = new URL(stack.layout.gateway.mcpUrl);
        const provider = new DocumentClientProvider(browser, documentUrl, readOnlyUser());
        const client = await connectByUrlAlone(mcpUrl, provider);
        expect(provider.loginPages).toHaveLength(1);

        // delete_user: the gateway's 403 insufficient_scope, and the SDK (SEP-2350 step-up,
        // onInsufficientScope 'reauthorize') sends the user to the IdP again for the scope.
        await expect(
          client.callTool({ name: 'delete_user', arguments: { userId: 'nobody' } }),
        ).rejects.toBeInstanceOf(UnauthorizedError);
        expect(provider.loginPages).toHaveLength(2);
        expect(provider.authorizationUrls[1]?.searchParams.get('scope')?.split(' ')).toContain(
          'internal_user_mgt_delete',
        );

        // The IdP says no, and why: the client's callback gets the refusal, not a code that
        // would bring the same 403 and another sign-in.
        const landed = provider.landed?.searchParams ?? new URLSearchParams();
        expect(landed.get('error')).toBe('access_denied');
        const transport = new Transport(mcpUrl, {
          authProvider: provider,
          fetch: fetchTrustingCa(stack.layout.caFile),
        });
        await expect(transport.finishAuth(landed)).rejects.toThrow(/internal_user_mgt_delete/);
        expect(provider.loginPages).toHaveLength(2);
        await client.close();
      },
      STACK_MS,
    );
  },
  () => ({
    trustedCertificates: [stack.layout.idp.certFile],
  }),
);
