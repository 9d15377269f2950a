import { createHash, randomBytes } from 'node:crypto';
import type { RunningServer } from '@mcp-identity/common';
import {
  describeRequiring,
  type LoopbackClient,
  loopbackAddresses,
  loopbackClient,
  redisMissing,
  startRedis,
  type TestRedis,
  useTempDir,
} from '@mcp-identity/common/testing';
import { DEFAULT_LIMITS, loginFormFields } from '@mcp-identity/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIRECT_URI } from './support/authorize.js';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-flood-');

/**
 * Issue 36, "anyone can lock everyone out": 10,000 anonymous registrations and 10,000
 * anonymous authorize requests from hundreds of addresses fill Area A's live-client and
 * pending-login caps. A cap bounds memory; it must not become a switch: afterwards a user from
 * a fresh address still registers a client, signs in and gets a token.
 */
function floodContract(stateUrl: () => string | undefined) {
  let server: RunningServer;
  let password = '';
  const clients: LoopbackClient[] = [];

  beforeAll(async () => {
    server = await startBuiltinServer(tempDir(), {
      dataDir: tempDir(),
      stateUrl: stateUrl(),
      onInitialAccount: (account) => {
        password = account.password;
      },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await server?.close();
  });

  /** One client per address, each in its own /24, from `block` on. */
  function fromAddresses(count: number, block: number): LoopbackClient[] {
    const created = loopbackAddresses(count, { block }).map(loopbackClient);
    clients.push(...created);
    return created;
  }

  /** Every client sends `perClient` requests in turn, all clients at once; the statuses. */
  async function flood(
    senders: LoopbackClient[],
    perClient: number,
    request: (sender: LoopbackClient, i: number) => Promise<{ status: number }>,
  ): Promise<Map<number, number>> {
    const statuses = new Map<number, number>();
    await Promise.all(
      senders.map(async (sender, s) => {
        for (let i = 0; i < perClient; i += 1) {
          const { status } = await request(sender, s * perClient + i);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    return statuses;
  }

  const register = (sender: LoopbackClient) =>
    sender.send(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
    });

  const authorizeQuery = (clientId: string, challenge: string) =>
    new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'flood',
    });

  const registered = (response: { text: string }) =>
    (JSON.parse(response.text) as { client_id: string }).client_id;

  const floodClients: string[] = [];
  let user: LoopbackClient;
  /** The user's client, registered before the floods. */
  let userClient = '';

  it('lets a fresh address register a client after 10,000 registrations from 500 addresses', async () => {
    [user] = fromAddresses(1, 200) as [LoopbackClient];
    const before = await register(user);
    expect(before.status).toBe(200);
    userClient = registered(before);
    // 20 from each address (the per-address limit), 10,000 in all: the live-client cap.
    expect(DEFAULT_LIMITS.maxClients).toBe(10_000);
    const registrations = await flood(fromAddresses(500, 1), 20, async (sender) => {
      const response = await register(sender);
      if (response.status === 200) floodClients.push(registered(response));
      return response;
    });
    expect(Object.fromEntries(registrations)).toEqual({ 200: 10_000 });
    const fresh = await register(fromAddresses(1, 201)[0] as LoopbackClient);
    expect(fresh.status).toBe(200);
    // The flood's own never-used clients made room, not the user's.
    const page = await user.send(
      `${server.url}/oauth/authorize?${authorizeQuery(userClient, 'A'.repeat(43))}`,
    );
    expect(page.status).toBe(200);
  }, 120_000);

  it('lets a user from a fresh address sign in and get a token after 10,000 authorize requests from 200 addresses', async () => {
    // 50 login forms from each of 200 addresses, for ten of the flood's clients (its newest:
    // the registrations beyond the cap displaced some of its oldest): the cap.
    expect(DEFAULT_LIMITS.maxPendingAuthorizations).toBe(10_000);
    const targets = floodClients.slice(-10);
    const challenge = createHash('sha256').update('flood').digest('base64url');
    const forms = await flood(fromAddresses(200, 10), 50, (sender, i) =>
      sender.send(
        `${server.url}/oauth/authorize?${authorizeQuery(targets[i % 10] as string, challenge)}`,
      ),
    );
    expect(Object.fromEntries(forms)).toEqual({ 200: 10_000 });

    const verifier = randomBytes(32).toString('base64url');
    const page = await user.send(
      `${server.url}/oauth/authorize?${authorizeQuery(
        userClient,
        createHash('sha256').update(verifier).digest('base64url'),
      )}`,
    );
    expect(page.status).toBe(200);
    const login = await user.send(`${server.url}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        ...loginFormFields(page.text),
        email: 'admin@localhost',
        password,
      }).toString(),
    });
    expect(login.status).toBe(303);
    const code = new URL(login.headers.location as string).searchParams.get('code');
    const token = await user.send(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code as string,
        client_id: userClient,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      }).toString(),
    });
    expect(token.status).toBe(200);
    expect(JSON.parse(token.text)).toMatchObject({ token_type: 'Bearer', scope: 'mcp:tools' });
  }, 120_000);
}

describe('Area A (state in memory) after registration and authorize floods from hundreds of addresses', () => {
  floodContract(() => undefined);
});

describeRequiring(
  'Area A (state in Redis) after registration and authorize floods from hundreds of addresses',
  redisMissing(),
  () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(() => redis?.close());
    floodContract(() => redis.url);
  },
);
