import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseCommandLine, startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { ConfigError, createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  FIXTURE_ENV,
  type FixtureApi,
  REFUSED_SUBJECT,
  startFixtureApi,
  TOKEN_EXCHANGE_GRANT,
  writeFixtures,
} from './support/fixture-api.js';

// Issue 41: in delegated mode every /mcp request carries the gateway's exchanged token (checked
// here, not trusted), and every tool call exchanges it again (RFC 8693) for the API's token with
// the operation's own scopes, so the API sees the user, never the server's own account.

const ISSUER = 'https://idp.test';
const AUDIENCE = 'http://127.0.0.1:7002';
const HEADER = { name: 'X-Gateway-Auth', value: 'gateway-credential-0123456789' };
const tempDir = useTempDir('arazzo-mcp-delegated-');
const servers: RunningServer[] = [];
let api: FixtureApi;
let mcpUrl: string;
let sign: (claims: Record<string, unknown>, issuer?: string) => Promise<string>;
let jwks: ReturnType<typeof createServer>;

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  jwks = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;
  sign = (claims, issuer = ISSUER) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);

  api = await startFixtureApi();
  const files = writeFixtures(tempDir(), api.url);
  const server = await startArazzoMcpHttp({
    arazzo: files.users,
    sourceServers: { scim: `${api.url}/scim2` },
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
    logger: createLogger({ level: 'silent', pretty: false }),
    requiredHeader: HEADER,
    delegatedAuth: { issuer: ISSUER, jwksUrl, audience: AUDIENCE },
  });
  servers.push(server);
  mcpUrl = `${server.url}/mcp`;
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await api?.close();
  jwks?.close();
});

const userToken = (sub = 'alice') =>
  sign({ sub, aud: [AUDIENCE, 'mcp-gateway'], client_id: 'mcp-gateway', scope: 'mcp:tools' });

interface RpcAnswer {
  result: { isError?: boolean; structuredContent?: unknown; content: { text: string }[] };
  error: { code: number };
}

async function post(
  body: object,
  headers: Record<string, string>,
): Promise<{ status: number; challenge: string | null; body: RpcAnswer }> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: (await response.json()) as RpcAnswer,
  };
}

const callTool = (name: string, args: object, headers: Record<string, string>) =>
  post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, headers);

const withToken = (token: string) => ({
  [HEADER.name]: HEADER.value,
  authorization: `Bearer ${token}`,
});

describe('arazzo-mcp serve in delegated mode', () => {
  it('exchanges the caller token per call with the operation scopes and sends the result', async () => {
    const caller = await userToken();
    const formsBefore = api.tokenForms.length;
    const answer = await callTool('get_user_by_id', { userId: 'u1' }, withToken(caller));
    expect(answer.status).toBe(200);
    expect(answer.body.result.isError).toBe(false);
    expect(answer.body.result.structuredContent).toMatchObject({ user: { userName: 'alice' } });
    const forms = api.tokenForms.slice(formsBefore);
    expect(forms).toEqual([
      {
        grant_type: TOKEN_EXCHANGE_GRANT,
        subject_token: caller,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        resource: `${api.url}/scim2`,
        scope: 'internal_user_mgt_view',
      },
    ]);
    // The exchanged token went to the API, never the caller's own.
    expect(api.apiTokens.at(-1)).toMatch(/^tok-/);
    expect(api.apiTokens).not.toContain(caller);

    // A new token per call (system spec §2.11 rule 8): the same caller exchanges again.
    await callTool('get_user_by_id', { userId: 'u1' }, withToken(caller));
    expect(api.tokenForms.length - formsBefore).toBe(2);
    expect(api.tokenForms.every((form) => form.grant_type === TOKEN_EXCHANGE_GRANT)).toBe(true);
  });

  it('asks the create operation for exactly its own scope', async () => {
    const before = api.tokenForms.length;
    const answer = await callTool(
      'create_user',
      { user: JSON.stringify({ userName: 'bob' }) },
      withToken(await userToken()),
    );
    expect(answer.body.result.isError).toBe(false);
    expect(api.tokenForms.slice(before).map((form) => form.scope)).toEqual([
      'internal_user_mgt_create',
    ]);
  });

  it('makes a refused exchange a tool error naming the refusal, without calling the API', async () => {
    const apiCalls = api.apiTokens.length;
    const answer = await callTool(
      'get_user_by_id',
      { userId: 'u1' },
      withToken(await userToken(REFUSED_SUBJECT)),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.result.isError).toBe(true);
    expect(answer.body.result.content[0]?.text).toMatch(
      /token exchange .* failed: .*invalid_grant/,
    );
    expect(api.apiTokens.length).toBe(apiCalls);
  });

  it('refuses a request without a bearer token with 401 and a bare Bearer challenge', async () => {
    const answer = await callTool(
      'get_user_by_id',
      { userId: 'u1' },
      { [HEADER.name]: HEADER.value },
    );
    expect(answer.status).toBe(401);
    expect(answer.challenge).toBe('Bearer');
    expect(answer.body.error.code).toBe(-32001);
  });

  it('refuses a token of another issuer, for another audience, or expired with invalid_token', async () => {
    const expired = await new SignJWT({ sub: 'alice', aud: AUDIENCE })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign((await generateKeyPair('RS256')).privateKey);
    const tokens = [
      await sign({ sub: 'alice', aud: AUDIENCE }, 'https://other.test'),
      await sign({ sub: 'alice', aud: 'http://127.0.0.1:9999' }),
      expired,
      'not-a-jwt',
    ];
    const formsBefore = api.tokenForms.length;
    for (const token of tokens) {
      const answer = await callTool('get_user_by_id', { userId: 'u1' }, withToken(token));
      expect(answer.status).toBe(401);
      expect(answer.challenge).toMatch(/^Bearer error="invalid_token", error_description="/);
    }
    expect(api.tokenForms.length).toBe(formsBefore);
  });

  it('still requires the upstream header', async () => {
    const answer = await callTool(
      'get_user_by_id',
      { userId: 'u1' },
      { authorization: `Bearer ${await userToken()}` },
    );
    expect(answer.status).toBe(401);
  });
});

describe('arazzo-mcp serve by default', () => {
  it('keeps asking for client-credentials tokens, whatever Authorization a request carries', async () => {
    const files = writeFixtures(tempDir(), api.url);
    const server = await startArazzoMcpHttp({
      arazzo: files.users,
      sourceServers: { scim: `${api.url}/scim2` },
      env: { SCIM_OAUTH2_CLIENT_ID: CLIENT_ID, SCIM_OAUTH2_CLIENT_SECRET: CLIENT_SECRET },
      port: 0,
      handleSignals: false,
      logger: createLogger({ level: 'silent', pretty: false }),
    });
    servers.push(server);
    const before = api.tokenForms.length;
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${await userToken()}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_user_by_id', arguments: { userId: 'u1' } },
      }),
    });
    expect(response.status).toBe(200);
    expect(api.tokenForms.slice(before)).toEqual([
      { grant_type: 'client_credentials', scope: 'internal_user_mgt_view' },
    ]);
  });
});

describe('the --delegated-* options', () => {
  const serve = (...flags: string[]) =>
    parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml', ...flags], {});

  it('are off by default and read together when the issuer is given', () => {
    expect(serve()).toMatchObject({ options: { delegatedAuth: undefined } });
    expect(
      serve(
        '--delegated-issuer',
        ISSUER,
        '--delegated-audience',
        AUDIENCE,
        '--delegated-resource',
        'https://idp.test/scim2',
      ),
    ).toMatchObject({
      options: {
        delegatedAuth: { issuer: ISSUER, audience: AUDIENCE, resource: 'https://idp.test/scim2' },
      },
    });
  });

  it('refuse a missing audience, a lone companion flag, a non-URL, stdio or --auth builtin', () => {
    for (const flags of [
      ['--delegated-issuer', ISSUER],
      ['--delegated-audience', AUDIENCE],
      ['--delegated-issuer', 'not a url', '--delegated-audience', AUDIENCE],
      ['--delegated-issuer', ISSUER, '--delegated-audience', AUDIENCE, '--transport', 'stdio'],
      ['--delegated-issuer', ISSUER, '--delegated-audience', AUDIENCE, '--auth', 'builtin'],
    ]) {
      expect(() => serve(...flags), flags.join(' ')).toThrow(ConfigError);
    }
  });
});
