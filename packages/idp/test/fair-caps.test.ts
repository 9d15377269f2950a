import { createLogger } from '@mcp-identity/common';
import { loopbackAddresses, useTempDir } from '@mcp-identity/common/testing';
import { DEFAULT_OAUTH_LIMITS, startIdp } from '@mcp-identity/idp';
import { describe, expect, it } from 'vitest';
import {
  clientsAt,
  createUserWithRole,
  openLoginForm,
  registerClient,
  registeredFrom,
  registerFrom,
  signIn,
  signInFrom,
  startTestIdp,
  submitLoginForm,
} from './helpers.js';

// What the caps in front of registration and the login form do when someone fills them: the
// network (/24) holding the most pays first, and nothing a person started is refused.
const user = { userName: 'person', password: 'Person-pass1' };

describe('dynamic clients at the cap', async () => {
  const idp = await startTestIdp({
    limits: { maxDynamicClients: 10 },
  });
  await createUserWithRole(idp, user.userName, user.password, ['internal_login']);
  const [newcomer, floodA, floodB] = clientsAt([
    ...loopbackAddresses(1, { block: 200 }),
    ...loopbackAddresses(2, { block: 1 }),
  ]);

  it("evicts the never-used clients of the busiest network, never a person's", async () => {
    const { clientId: used } = await signIn(idp, user, 'internal_login');
    const waiting = await registeredFrom(idp, newcomer!);
    for (let i = 0; i < 20; i++) {
      expect((await registerFrom(idp, i % 2 ? floodA! : floodB!)).status).toBe(201);
    }
    expect(idp.admin.apps.countDynamic()).toBe(10);
    expect(idp.admin.apps.get(used)).toBeDefined();
    expect(idp.admin.apps.get(waiting)).toBeDefined();
    expect(await signInFrom(idp, newcomer!, waiting, user)).toEqual({
      page: 200,
      login: 302,
      token: 200,
    });
  });

  it('refuses (503) only when every client has been used', async () => {
    const full = await startTestIdp({ limits: { maxDynamicClients: 2 } });
    await createUserWithRole(full, user.userName, user.password, ['internal_login']);
    await signIn(full, user, 'internal_login');
    await signIn(full, user, 'internal_login');
    const refused = await registerFrom(full, newcomer!);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text)).toMatchObject({ error: 'temporarily_unavailable' });
    expect(full.admin.apps.countDynamic()).toBe(2);
  });
});

describe('dynamic clients never used', async () => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const idp = await startTestIdp({ clock: () => now });
  await createUserWithRole(idp, user.userName, user.password, ['internal_login']);
  const [browser] = clientsAt(loopbackAddresses(1, { block: 200 }));

  it('expire a day after registering, while a used one stays', async () => {
    const unused = await registerClient(idp, 'never used');
    const { clientId: used } = await signIn(idp, user, 'internal_login');
    now += (DEFAULT_OAUTH_LIMITS.unusedClientTtlSeconds - 1) * 1000;
    expect((await openLoginForm(idp, browser!, unused)).status).toBe(200);
    now += 1000;
    expect((await openLoginForm(idp, browser!, unused)).status).toBe(400);
    expect(idp.admin.apps.get(unused)).toBeUndefined();
    expect((await signInFrom(idp, browser!, used, user)).token).toBe(200);
    // The next registration removes it for good: two clients before and after.
    expect(idp.admin.apps.countDynamic()).toBe(2);
    await registerClient(idp);
    expect(idp.admin.apps.countDynamic()).toBe(2);
    expect(idp.admin.apps.get(used)).toBeDefined();
  });
});

describe('pending login forms at the cap', async () => {
  const idp = await startTestIdp({
    limits: { maxPendingLogins: 20 },
  });
  await createUserWithRole(idp, user.userName, user.password, ['internal_login']);
  const clientId = await registerClient(idp);
  const [person, floodA, floodB] = clientsAt([
    ...loopbackAddresses(1, { block: 200 }),
    ...loopbackAddresses(2, { block: 1 }),
  ]);

  it("push out the flood's own forms before a person's", async () => {
    const first = await openLoginForm(idp, floodA!, clientId);
    const form = await openLoginForm(idp, person!, clientId);
    for (let i = 0; i < 60; i++) {
      expect((await openLoginForm(idp, i % 2 ? floodA! : floodB!, clientId)).status).toBe(200);
    }
    expect((await submitLoginForm(idp, floodA!, first, user)).status).toBe(400);
    expect(await submitLoginForm(idp, person!, form, user)).toMatchObject({ status: 302 });
  });
});

describe('pending login forms per network and per client', async () => {
  const idp = await startTestIdp({
    limits: { pendingLoginsPerNetwork: 3, pendingLoginsPerClient: 5 },
  });
  await createUserWithRole(idp, user.userName, user.password, ['internal_login']);
  const [person, neighbourA, neighbourB, ...flood] = clientsAt([
    ...loopbackAddresses(1, { block: 200 }),
    ...loopbackAddresses(2, { block: 50, sameNetwork: true }),
    ...loopbackAddresses(3, { block: 1 }),
  ]);

  it("hold one network to its quota with that network's oldest form", async () => {
    const clientId = await registerClient(idp);
    const mine = await openLoginForm(idp, person!, clientId);
    const theirs = [];
    for (const client of [neighbourA, neighbourB, neighbourA, neighbourB]) {
      theirs.push(await openLoginForm(idp, client!, clientId));
    }
    // Two addresses, one network (127.50.0.0/24): its fourth form replaced its first.
    expect((await submitLoginForm(idp, neighbourA!, theirs[0]!, user)).status).toBe(400);
    expect((await submitLoginForm(idp, neighbourB!, theirs[3]!, user)).status).toBe(302);
    expect((await submitLoginForm(idp, person!, mine, user)).status).toBe(302);
  });

  it("hold one client to its quota without pushing out the client's other users", async () => {
    const clientId = await registerClient(idp);
    const mine = await openLoginForm(idp, person!, clientId);
    const first = await openLoginForm(idp, flood[0]!, clientId);
    for (let i = 0; i < 12; i++) await openLoginForm(idp, flood[i % 3]!, clientId);
    expect((await submitLoginForm(idp, flood[0]!, first, user)).status).toBe(400);
    expect((await submitLoginForm(idp, person!, mine, user)).status).toBe(302);
  });

  it('count the authorize requests of one network together', async () => {
    const limited = await startTestIdp({ limits: { authorizeRequestsPerNetworkPerMinute: 100 } });
    const clientId = await registerClient(limited);
    const neighbours = clientsAt(loopbackAddresses(150, { block: 60, sameNetwork: true }));
    const statuses = await Promise.all(
      neighbours.map(async (client) => (await openLoginForm(limited, client, clientId)).status),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(50);
    expect((await openLoginForm(limited, person!, clientId)).status).toBe(200);
  });
});

describe('pending login forms across a restart', () => {
  it('still count, so the cap holds', async () => {
    const dataDir = useTempDir('idp-restart-')();
    const options = {
      dataDir,
      http: true,
      port: 0,
      logger: createLogger({ level: 'silent' }),
      limits: { maxPendingLogins: 3 },
      bootstrap: { users: [{ userName: user.userName, password: user.password }] },
    };
    const before = await startIdp(options);
    const [flooder, person] = clientsAt([
      ...loopbackAddresses(1, { block: 1 }),
      ...loopbackAddresses(1, { block: 200 }),
    ]);
    const clientId = await registerClient(before);
    const forms = [];
    for (let i = 0; i < 3; i++) forms.push(await openLoginForm(before, flooder!, clientId));
    await before.close();

    const after = await startIdp(options);
    try {
      const form = await openLoginForm(after, person!, clientId);
      // Newest first: a refused form renders a new one, which would push out the next.
      const flooded = [];
      for (const pending of forms.reverse()) {
        flooded.push((await submitLoginForm(after, flooder!, pending, user)).status);
      }
      expect(flooded).toEqual([302, 302, 400]);
      expect((await submitLoginForm(after, person!, form, user)).status).toBe(302);
    } finally {
      await after.close();
    }
  });
});
