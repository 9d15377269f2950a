import { startIdp } from '@mcp-identity/idp';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_CLIENT,
  authorizeRequest,
  createUserWithRole,
  postLogin,
  registerClient,
  signIn,
  startTestIdp,
  type TestIdp,
  tokenRequest,
} from './helpers.js';

const GATEWAY = 'https://localhost:8443/scim/mcp';
const CLOSED = 'https://api.example.com/closed';
const LIST = 'internal_user_mgt_list';
const VIEW = 'internal_user_mgt_view';
const CREATE = 'internal_user_mgt_create';
const DELETE = 'internal_user_mgt_delete';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function clientCredentials(
  idp: TestIdp,
  id: string,
  secret: string,
  extra: Record<string, string>,
) {
  const response = await fetch(`${idp.url}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic(id, secret),
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...extra }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

describe('API resources (RFC 8707)', async () => {
  const idp = await startTestIdp({
    bootstrap: {
      applications: [
        { name: 'admin', ...ADMIN_CLIENT, scopes: '*' },
        {
          name: 'scim-backend',
          clientId: 'scim-backend',
          clientSecret: 'backend-secret',
          scopes: '*',
        },
        { name: 'partner', clientId: 'partner', clientSecret: 'partner-secret', scopes: '*' },
      ],
      apiResources: [
        {
          identifier: GATEWAY,
          name: 'SCIM MCP gateway',
          scopes: [LIST, VIEW, DELETE],
          dynamicClients: true,
          applications: ['partner'],
        },
        { identifier: CLOSED, name: 'Closed API', scopes: [LIST] },
      ],
    },
  });
  const credentials = { userName: 'reader', password: 'Reader-pass1' };
  await createUserWithRole(idp, credentials.userName, credentials.password, [LIST, VIEW, CREATE]);

  it("a user's token for a resource has its audience and roles ∩ requested ∩ offered scopes", async () => {
    const tokens = await signIn(idp, credentials, `${LIST} ${VIEW} ${CREATE} ${DELETE}`, {
      extra: { resource: GATEWAY },
    });
    expect(tokens.scope).toBe(`${LIST} ${VIEW}`);
    const claims = decodeJwt(tokens.access_token);
    expect(claims.aud).toEqual([tokens.clientId, GATEWAY]);
    expect(claims.scope).toBe(`${LIST} ${VIEW}`);

    const refreshed = await tokenRequest(idp, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: tokens.clientId,
    });
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(refreshed.body.access_token!).aud).toEqual([tokens.clientId, GATEWAY]);
    const elsewhere = await tokenRequest(idp, {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token!,
      client_id: tokens.clientId,
      resource: CLOSED,
    });
    expect(elsewhere.body.error).toBe('invalid_target');
  });

  it('binds the token at the token endpoint too, and refuses unknown resources there', async () => {
    const clientId = await registerClient(idp);
    const { verifier, params } = authorizeRequest(clientId, LIST);
    const login = await postLogin(idp, params, credentials);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const exchange = (resource: string) =>
      tokenRequest(idp, {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: params.redirect_uri,
        code_verifier: verifier,
        resource,
      });
    const unknown = await exchange('https://unknown.example/api');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid_target');
  });

  it('sends the client back with invalid_target for resources it may not get', async () => {
    const clientId = await registerClient(idp);
    for (const resource of [CLOSED, 'https://unknown.example/api']) {
      const { params } = authorizeRequest(clientId, LIST, { resource });
      const page = await fetch(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`, {
        redirect: 'manual',
      });
      expect(page.status, resource).toBe(302);
      const location = new URL(page.headers.get('location')!);
      expect(location.searchParams.get('error')).toBe('invalid_target');
      expect(location.searchParams.get('state')).toBe(params.state);
    }
  });

  it('refuses more than one resource, and any other authorize parameter given twice', async () => {
    const clientId = await registerClient(idp);
    const { params } = authorizeRequest(clientId, LIST, { resource: GATEWAY });
    const query = new URLSearchParams(params);
    query.append('resource', CLOSED);
    const two = await fetch(`${idp.url}/oauth2/authorize?${query}`, { redirect: 'manual' });
    expect(two.status).toBe(302);
    expect(new URL(two.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
    const twice = new URLSearchParams(params);
    twice.append('client_id', clientId);
    const repeated = await fetch(`${idp.url}/oauth2/authorize?${twice}`, { redirect: 'manual' });
    expect(repeated.status).toBe(400);
    expect(repeated.headers.get('location')).toBeNull();
  });

  it('the backend application never gets the gateway audience', async () => {
    const backend = await clientCredentials(idp, 'scim-backend', 'backend-secret', {
      scope: LIST,
      resource: GATEWAY,
    });
    expect(backend.status).toBe(400);
    expect(backend.body.error).toBe('invalid_target');
    const plain = await clientCredentials(idp, 'scim-backend', 'backend-secret', { scope: LIST });
    expect(decodeJwt(plain.body.access_token!).aud).toBe('scim-backend');

    const partner = await clientCredentials(idp, 'partner', 'partner-secret', {
      scope: `${LIST} ${CREATE}`,
      resource: GATEWAY,
    });
    expect(partner.status).toBe(200);
    expect(partner.body.scope).toBe(LIST);
    expect(decodeJwt(partner.body.access_token!).aud).toEqual(['partner', GATEWAY]);
  });

  it('refuses invalid API resource definitions at start, naming them', async () => {
    const bad = (identifier: string, scopes: string[]) =>
      startIdp({
        dataDir: ':memory:',
        http: true,
        port: 0,
        bootstrap: { apiResources: [{ identifier, name: 'x', scopes }] },
      });
    await expect(bad('https://x.example/api#f', [LIST])).rejects.toThrow(/fragment/);
    await expect(bad('not a url', [LIST])).rejects.toThrow(/absolute URL/);
    await expect(bad('https://x.example/api', ['no_such_scope'])).rejects.toThrow(/no_such_scope/);
  });
});

describe('CORS for browser-based clients', async () => {
  const idp = await startTestIdp();
  const inspector = 'http://localhost:6274';

  it('lets an allowed origin read discovery, JWKS, registration and token answers', async () => {
    for (const path of ['/.well-known/oauth-authorization-server/oauth2/token', '/oauth2/jwks']) {
      const response = await fetch(`${idp.url}${path}`, { headers: { origin: inspector } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe(inspector);
      expect(response.headers.get('vary')).toContain('Origin');
    }
    const preflight = await fetch(`${idp.url}/oauth2/token`, {
      method: 'OPTIONS',
      headers: {
        origin: inspector,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(inspector);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const registered = await fetch(`${idp.url}/oauth2/register`, {
      method: 'POST',
      headers: { origin: inspector, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [`${inspector}/oauth/callback`] }),
    });
    expect(registered.status).toBe(201);
    expect(registered.headers.get('access-control-allow-origin')).toBe(inspector);
  });

  it('gives other origins nothing to read', async () => {
    const evil = 'http://evil.example';
    const response = await fetch(`${idp.url}/oauth2/jwks`, { headers: { origin: evil } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${idp.url}/oauth2/token`, {
      method: 'OPTIONS',
      headers: { origin: evil, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });
});
