import { type LoopbackClient, loopbackAddresses } from '@mcp-identity/common/testing';
import { DEFAULT_OAUTH_LIMITS } from '@mcp-identity/idp';
import { describe, expect, it } from 'vitest';
import {
  clientsAt,
  createUserWithRole,
  openLoginForm,
  registeredFrom,
  registerFrom,
  signInFrom,
  startTestIdp,
} from './helpers.js';

// Issue 36, "anyone can lock everyone out": 10,000 anonymous requests from hundreds of
// addresses, each in a network (/24) of its own, against the limits the IdP ships with.
const FLOOD = 10_000;
// In memory: the limits are the point here, not durability, and 10,000 synchronous commits to
// disk add seconds.
const IN_MEMORY = ':memory:';
const PASSWORD = 'Flooded-pass1';

/** `perClient` requests from each client in turn on its connection, all clients at once. */
async function flood(
  from: LoopbackClient[],
  perClient: number,
  send: (client: LoopbackClient, index: number) => Promise<{ status: number }>,
): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  await Promise.all(
    from.map(async (client, c) => {
      for (let i = 0; i < perClient; i++) {
        const { status } = await send(client, c * perClient + i);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

describe('a registration flood from hundreds of addresses', async () => {
  const idp = await startTestIdp({ dataDir: IN_MEMORY, limits: DEFAULT_OAUTH_LIMITS });
  await createUserWithRole(idp, 'newcomer', PASSWORD, ['internal_login']);

  it('leaves room for a new client from a new address, which a user signs in with', async () => {
    const perAddress = DEFAULT_OAUTH_LIMITS.registrationsPerIpPerHour;
    const flooders = clientsAt(loopbackAddresses(FLOOD / perAddress, { block: 1 }));
    const statuses = await flood(flooders, perAddress, (client) => registerFrom(idp, client));
    expect(statuses).toEqual({ 201: FLOOD });
    expect(idp.admin.apps.countDynamic()).toBe(DEFAULT_OAUTH_LIMITS.maxDynamicClients);

    const [newcomer] = clientsAt(loopbackAddresses(1, { block: 200 }));
    const clientId = await registeredFrom(idp, newcomer!, 'newcomer');
    expect(
      await signInFrom(idp, newcomer!, clientId, { userName: 'newcomer', password: PASSWORD }),
    ).toEqual({ page: 200, login: 302, token: 200 });
    expect(idp.admin.apps.countDynamic()).toBe(DEFAULT_OAUTH_LIMITS.maxDynamicClients);
  }, 120_000);

  it('gives the addresses of one network one quota', async () => {
    const neighbours = clientsAt(loopbackAddresses(254, { block: 50, sameNetwork: true }));
    const statuses = await flood(neighbours, 1, (client) => registerFrom(idp, client));
    const perNetwork = DEFAULT_OAUTH_LIMITS.registrationsPerNetworkPerHour;
    expect(statuses).toEqual({ 201: perNetwork, 429: 254 - perNetwork });
    const [elsewhere] = clientsAt(loopbackAddresses(1, { block: 201 }));
    expect((await registerFrom(idp, elsewhere!)).status).toBe(201);
  });
});

describe('an authorize flood from hundreds of addresses', async () => {
  const idp = await startTestIdp({ dataDir: IN_MEMORY, limits: DEFAULT_OAUTH_LIMITS });
  await createUserWithRole(idp, 'existing', PASSWORD, ['internal_login']);

  it('still shows a user from a new address the login page, and signs them in', async () => {
    const perAddress = 40;
    const flooders = clientsAt(loopbackAddresses(FLOOD / perAddress, { block: 1 }));
    // The attacker's own clients, ten of them, so no one client's quota holds the flood back.
    const floodClients = await Promise.all(
      flooders.slice(0, 10).map((client) => registeredFrom(idp, client)),
    );
    const statuses = await flood(flooders, perAddress, (client, i) =>
      openLoginForm(idp, client, floodClients[i % floodClients.length]!),
    );
    expect(statuses).toEqual({ 200: FLOOD });

    const [user] = clientsAt(loopbackAddresses(1, { block: 200 }));
    const clientId = await registeredFrom(idp, user!, 'user');
    expect(
      await signInFrom(idp, user!, clientId, { userName: 'existing', password: PASSWORD }),
    ).toEqual({ page: 200, login: 302, token: 200 });
  }, 120_000);
});
