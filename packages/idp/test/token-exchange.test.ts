import { generateKeyPairSync } from 'node:crypto';
import { createLogger } from '@mcp-identity/common';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_CLIENT,
  createUserWithRole,
  signIn,
  startTestIdp,
  type TestIdp,
  userBody,
} from './helpers.js';

// RFC 8693 token exchange at the IdP's token endpoint, through real HTTP: the chain the
// gateway (mcp-gateway) and the SCIM MCP server's backend (scim-backend) run in delegated mode.

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const GATEWAY_RESOURCE = 'https://gateway.test/scim/mcp';
const SCIM_MCP = 'http://scim-mcp.test/mcp';
const SCIM_API = 'https://idp.test/scim2';
const GATEWAY = { clientId: 'mcp-gateway', clientSecret: 'gateway-exchange-secret' };
const BACKEND = { clientId: 'scim-backend', clientSecret: 'scim-backend-secret' };
const PASSWORD = 'Str0ng-Passw0rd!';
const USER_SCOPES = [
  'internal_user_mgt_create',
  'internal_user_mgt_list',
  'internal_user_mgt_view',
  'internal_user_mgt_delete',
];

type Answer = { status: number; body: Record<string, unknown> };

let idp: TestIdp;
let clock = Date.now();
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  idp = await startTestIdp({
    clock: () => clock,
    logger: createLogger({
      level: 'info',
      destination: { write: (line: string) => logLines.push(JSON.parse(line)) },
    }),
    bootstrap: {
      applications: [
        { name: 'admin', ...ADMIN_CLIENT, scopes: '*', grantTypes: ['client_credentials'] },
        {
          name: 'mcp-gateway',
          ...GATEWAY,
          scopes: '*',
          grantTypes: [GRANT],
          tokenExchange: { subjectAudiences: [GATEWAY_RESOURCE], resources: [SCIM_MCP] },
        },
        {
          name: 'scim-backend',
          ...BACKEND,
          scopes: USER_SCOPES,
          grantTypes: ['client_credentials', GRANT],
          tokenExchange: { subjectAudiences: [SCIM_MCP], resources: [SCIM_API] },
        },
      ],
      apiResources: [
        {
          identifier: GATEWAY_RESOURCE,
          name: 'SCIM tools through the gateway',
          scopes: USER_SCOPES,
          dynamicClients: true,
        },
      ],
    },
  });
});

/** A token exchange by `client` (client_secret_basic), with `fields` over the contract's defaults. */
async function exchange(
  client: { clientId: string; clientSecret: string },
  fields: Record<string, string | string[] | undefined>,
): Promise<Answer> {
  const form = new URLSearchParams();
  const all = {
    grant_type: GRANT,
    subject_token_type: ACCESS_TOKEN,
    resource: SCIM_MCP,
    ...fields,
  };
  for (const [name, value] of Object.entries(all)) {
    for (const one of value === undefined ? [] : [value].flat()) form.append(name, one);
  }
  const response = await fetch(`${idp.url}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
    },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

let users = 0;
/** A new user with `permissions`, signed in for the gateway's resource with `scope`. */
async function userToken(permissions: readonly string[], scope = permissions.join(' ')) {
  const userName = `exchange-user-${++users}`;
  const { userId, roleId } = await createUserWithRole(idp, userName, PASSWORD, permissions);
  const tokens = await signIn(idp, { userName, password: PASSWORD }, scope, {
    extra: { resource: GATEWAY_RESOURCE },
  });
  return { userId, roleId, token: tokens.access_token, clientId: tokens.clientId };
}

const refusal = (answer: Answer) => ({ status: answer.status, error: answer.body.error });

describe('token exchange (RFC 8693)', () => {
  it('is advertised in the authorization server metadata', async () => {
    const metadata = (await (
      await fetch(`${idp.url}/.well-known/oauth-authorization-server`)
    ).json()) as { grant_types_supported: string[] };
    expect(metadata.grant_types_supported).toContain(GRANT);
  });

  it('issues a token for the resource with the user as subject and the client as actor', async () => {
    const { userId, token } = await userToken(USER_SCOPES);
    const answer = await exchange(GATEWAY, { subject_token: token });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      issued_token_type: ACCESS_TOKEN,
      token_type: 'Bearer',
      scope: USER_SCOPES.join(' '),
    });
    const claims = decodeJwt(answer.body.access_token as string);
    expect(claims).toMatchObject({
      iss: idp.issuer,
      sub: userId,
      client_id: GATEWAY.clientId,
      aud: [GATEWAY.clientId, SCIM_MCP],
      scope: USER_SCOPES.join(' '),
      act: { sub: GATEWAY.clientId },
    });
    expect(claims.exp).toBeLessThanOrEqual(decodeJwt(token).exp!);
    expect(answer.body.expires_in).toBe(claims.exp! - claims.iat!);
  });

  it('nests the actors after two exchanges, the current actor outermost (§4.1)', async () => {
    const { userId, token } = await userToken(USER_SCOPES);
    const first = await exchange(GATEWAY, { subject_token: token });
    const second = await exchange(BACKEND, {
      subject_token: first.body.access_token as string,
      resource: SCIM_API,
      scope: 'internal_user_mgt_create',
    });
    expect(second.status).toBe(200);
    expect(second.body.scope).toBe('internal_user_mgt_create');
    const claims = decodeJwt(second.body.access_token as string);
    expect(claims).toMatchObject({
      sub: userId,
      client_id: BACKEND.clientId,
      aud: [BACKEND.clientId, SCIM_API],
      act: { sub: BACKEND.clientId, act: { sub: GATEWAY.clientId } },
    });
    expect((claims.act as { act: Record<string, unknown> }).act.act).toBeUndefined();
  });

  it('logs a SCIM write made with the exchanged token with its subject and actors', async () => {
    const { userId, token } = await userToken(USER_SCOPES);
    const first = await exchange(GATEWAY, { subject_token: token });
    const second = await exchange(BACKEND, {
      subject_token: first.body.access_token as string,
      resource: SCIM_API,
    });
    const created = await idp.scim('POST', '/Users', {
      token: second.body.access_token as string,
      body: userBody('created-on-behalf'),
    });
    expect(created.status).toBe(201);
    const line = logLines.find(
      (l) => l.msg === 'SCIM write' && (l.scimWrite as { subject?: string }).subject === userId,
    );
    expect(line?.scimWrite).toEqual({
      method: 'POST',
      route: '/scim2/Users',
      status: 201,
      subject: userId,
      clientId: BACKEND.clientId,
      actor: [BACKEND.clientId, GATEWAY.clientId],
    });
    expect(JSON.stringify(line)).not.toContain(second.body.access_token);

    // Counted by the outermost actor (a bounded label: clients allowed to exchange).
    const metrics = await fetch(`${idp.url}/metrics`, {
      headers: { authorization: `Bearer ${await idp.token(['internal_metrics_view'])}` },
    });
    expect(await metrics.text()).toMatch(
      /^idp_scim_writes_total\{resource="Users",method="POST",status="201",actor="scim-backend"\} [1-9]/m,
    );
  });

  it("drops scopes the user's role no longer grants, and refuses an unknown scope", async () => {
    const { token, roleId } = await userToken(USER_SCOPES);
    // The role loses create after the subject token was issued: the exchange asks the roles now.
    const narrowed = await idp.scim('PATCH', `/v2/Roles/${roleId}`, {
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            path: 'permissions',
            value: [{ value: 'internal_user_mgt_view' }, { value: 'internal_user_mgt_list' }],
          },
        ],
      },
    });
    expect(narrowed.status).toBe(200);
    const answer = await exchange(GATEWAY, {
      subject_token: token,
      scope: 'internal_user_mgt_create internal_user_mgt_view',
    });
    expect(answer.status).toBe(200);
    expect(answer.body.scope).toBe('internal_user_mgt_view');
    expect(decodeJwt(answer.body.access_token as string).scope).toBe('internal_user_mgt_view');

    const unknown = await exchange(GATEWAY, { subject_token: token, scope: 'no_such_scope' });
    expect(refusal(unknown)).toEqual({ status: 400, error: 'invalid_scope' });
  });

  it('grants no scope the subject token or the exchanging client lacks', async () => {
    const { token } = await userToken(USER_SCOPES, 'internal_user_mgt_view');
    const beyondSubject = await exchange(GATEWAY, {
      subject_token: token,
      scope: 'internal_user_mgt_view internal_user_mgt_delete',
    });
    expect(beyondSubject.body.scope).toBe('internal_user_mgt_view');

    const admin = await userToken([...USER_SCOPES, 'internal_group_mgt_view']);
    const first = await exchange(GATEWAY, { subject_token: admin.token });
    const second = await exchange(BACKEND, {
      subject_token: first.body.access_token as string,
      resource: SCIM_API,
      scope: 'internal_group_mgt_view internal_user_mgt_view',
    });
    expect(second.body.scope).toBe('internal_user_mgt_view');
  });

  it('refuses a subject token signed by another key (invalid_grant)', async () => {
    const { token } = await userToken(USER_SCOPES);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT(decodeJwt(token))
      .setProtectedHeader({ ...decodeProtectedHeader(token), alg: 'RS256' })
      .sign(privateKey);
    expect(refusal(await exchange(GATEWAY, { subject_token: forged }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('refuses a subject token of another issuer (invalid_grant)', async () => {
    // Another IdP, with the same resource: only the issuer and its keys differ.
    const other = await startTestIdp({
      bootstrap: {
        applications: [
          { name: 'admin', ...ADMIN_CLIENT, scopes: '*', grantTypes: ['client_credentials'] },
        ],
        apiResources: [
          { identifier: GATEWAY_RESOURCE, name: 'r', scopes: USER_SCOPES, dynamicClients: true },
        ],
      },
    });
    const userName = 'elsewhere';
    await createUserWithRole(other, userName, PASSWORD, USER_SCOPES);
    const tokens = await signIn(other, { userName, password: PASSWORD }, USER_SCOPES.join(' '), {
      extra: { resource: GATEWAY_RESOURCE },
    });
    expect(decodeJwt(tokens.access_token).aud).toContain(GATEWAY_RESOURCE);
    expect(refusal(await exchange(GATEWAY, { subject_token: tokens.access_token }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('refuses an expired subject token (invalid_grant)', async () => {
    const { token } = await userToken(USER_SCOPES);
    const now = clock;
    clock = (decodeJwt(token).exp! + 1) * 1000;
    try {
      expect(refusal(await exchange(GATEWAY, { subject_token: token }))).toEqual({
        status: 400,
        error: 'invalid_grant',
      });
    } finally {
      clock = now;
    }
  });

  it('refuses a revoked subject token (invalid_grant)', async () => {
    const { token, clientId } = await userToken(USER_SCOPES);
    const revoked = await fetch(`${idp.url}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    expect(refusal(await exchange(GATEWAY, { subject_token: token }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('refuses a subject token for an audience the client may not consume (invalid_grant)', async () => {
    const userName = `no-resource-${++users}`;
    await createUserWithRole(idp, userName, PASSWORD, USER_SCOPES);
    const tokens = await signIn(idp, { userName, password: PASSWORD }, USER_SCOPES.join(' '));
    expect(refusal(await exchange(GATEWAY, { subject_token: tokens.access_token }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    // The gateway's own exchanged token is for the SCIM MCP server, not for the gateway.
    const { token } = await userToken(USER_SCOPES);
    const first = await exchange(GATEWAY, { subject_token: token });
    const again = await exchange(GATEWAY, { subject_token: first.body.access_token as string });
    expect(refusal(again)).toEqual({ status: 400, error: 'invalid_grant' });
  });

  it("refuses an application's own (client-credentials) token as subject (invalid_grant)", async () => {
    const answer = await exchange(GATEWAY, { subject_token: idp.adminToken });
    expect(refusal(answer)).toEqual({ status: 400, error: 'invalid_grant' });
  });

  it('refuses a deleted and a disabled user (invalid_grant)', async () => {
    const deleted = await userToken(USER_SCOPES);
    expect((await idp.scim('DELETE', `/Users/${deleted.userId}`)).status).toBe(204);
    expect(refusal(await exchange(GATEWAY, { subject_token: deleted.token }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });

    const disabled = await userToken(USER_SCOPES);
    const patched = await idp.scim('PATCH', `/Users/${disabled.userId}`, {
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      },
    });
    expect(patched.status).toBe(200);
    expect(refusal(await exchange(GATEWAY, { subject_token: disabled.token }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('refuses an application not allowed the grant (unauthorized_client)', async () => {
    const { token } = await userToken(USER_SCOPES);
    expect(refusal(await exchange(ADMIN_CLIENT, { subject_token: token }))).toEqual({
      status: 400,
      error: 'unauthorized_client',
    });
  });

  it('refuses a resource the client may not exchange for (invalid_target)', async () => {
    const { token } = await userToken(USER_SCOPES);
    for (const target of [{ resource: SCIM_API }, { resource: undefined, audience: SCIM_API }]) {
      expect(refusal(await exchange(GATEWAY, { subject_token: token, ...target }))).toEqual({
        status: 400,
        error: 'invalid_target',
      });
    }
    const two = await exchange(GATEWAY, { subject_token: token, audience: SCIM_MCP });
    expect(refusal(two)).toEqual({ status: 400, error: 'invalid_target' });
  });

  it('accepts `audience` as the target', async () => {
    const { token } = await userToken(USER_SCOPES);
    const answer = await exchange(GATEWAY, {
      subject_token: token,
      resource: undefined,
      audience: SCIM_MCP,
    });
    expect(answer.status).toBe(200);
    expect(decodeJwt(answer.body.access_token as string).aud).toEqual([GATEWAY.clientId, SCIM_MCP]);
  });

  it('refuses malformed requests (invalid_request) and a wrong secret (invalid_client)', async () => {
    const { token } = await userToken(USER_SCOPES);
    const cases: Record<string, string | string[] | undefined>[] = [
      { subject_token: undefined },
      { subject_token: [token, token] },
      { subject_token: token, subject_token_type: undefined },
      { subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
      { subject_token: token, requested_token_type: 'urn:ietf:params:oauth:token-type:jwt' },
      { subject_token: token, actor_token: token, actor_token_type: ACCESS_TOKEN },
      { subject_token: token, resource: undefined },
    ];
    for (const fields of cases) {
      expect(refusal(await exchange(GATEWAY, fields))).toEqual({
        status: 400,
        error: 'invalid_request',
      });
    }
    const wrongSecret = await exchange(
      { clientId: GATEWAY.clientId, clientSecret: 'not-the-secret' },
      { subject_token: token },
    );
    expect(refusal(wrongSecret)).toEqual({ status: 401, error: 'invalid_client' });
  });
});
