import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, ISSUER, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-introspection-request-');
const SECRET_VARIABLE = 'INTROSPECTION_REQUEST_TEST_SECRET';
/** Characters RFC 6749 §2.3.1 makes the client form-encode before Base64. */
const CLIENT_ID_AT_IDP = 'gateway:one';
const SECRET = 'p@ss wörd+/=';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** An introspection endpoint that records what it is sent and answers `active` for JWTs. */
async function startIntrospectionEndpoint(): Promise<{
  url: string;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ headers: req.headers, body });
    const token = new URLSearchParams(body).get('token') ?? '';
    const answer =
      token.split('.').length === 3
        ? {
            active: true,
            iss: ISSUER,
            aud: CLIENT_ID,
            scope: 'a b',
            exp: Math.floor(Date.now() / 1000) + 600,
          }
        : { active: false };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/introspect`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('an introspection request (allTokens: the JWTs of a key manager introspected too)', () => {
  let km: KeyManager;
  let endpoint: Awaited<ReturnType<typeof startIntrospectionEndpoint>>;
  let upstream: Upstream;
  let fx: GatewayFixture;

  beforeAll(async () => {
    km = await startKeyManager();
    endpoint = await startIntrospectionEndpoint();
    upstream = await startUpstream();
    process.env[SECRET_VARIABLE] = SECRET;
    fx = await startTestGateway({
      dataDir: tempDir(),
      keyManagers: [
        {
          name: 'idp',
          issuer: ISSUER,
          jwks: { remote: { uri: km.jwksUri, skipTlsVerify: true } },
          introspection: {
            endpoint: endpoint.url,
            clientId: CLIENT_ID_AT_IDP,
            clientSecretRef: `env:${SECRET_VARIABLE}`,
            allTokens: true,
          },
        },
      ],
    });
    const auth = [{ name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } }];
    expect((await fx.deploy(proxyDefinition('i-v1.0', '/i', upstream.mcpUrl, auth))).status).toBe(
      201,
    );
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), endpoint?.close(), km?.stop()]);
    delete process.env[SECRET_VARIABLE];
  });

  it('POSTs token=… form-encoded with client_secret_basic, and trusts the answer over the JWKS', async () => {
    const token = await km.sign({});
    const response = await postMcp(
      `${fx.gateway.plainUrl}/i/mcp`,
      toolCall('search_users', { filter: 'x', count: 1 }),
      { authorization: `Bearer ${token}` },
    );
    expect(response.status).toBe(200);
    expect(endpoint.received).toHaveLength(1);
    const [request] = endpoint.received as [Received];
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request.headers.accept).toBe('application/json');
    // RFC 6749 Appendix B: `:` → %3A, space → +, non-ASCII as UTF-8 octets.
    const encoded = 'gateway%3Aone:p%40ss+w%C3%B6rd%2B%2F%3D';
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(encoded).toString('base64')}`);
    expect(Object.fromEntries(new URLSearchParams(request.body))).toEqual({
      token,
      token_type_hint: 'access_token',
    });
  });
});
