import type {
  AuthorizationTransaction,
  LoginAdmission,
  OAuthStore,
  RegisteredClient,
} from '@mcp-identity/oauth';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeEachStore, type OpenStore } from './fixtures/stores.js';

/**
 * The capped pools of pending logins and never-used clients, one table for every store: a full
 * pool makes room at the expense of whoever holds the most, never by refusing a newcomer.
 */
const TTL = 600_000;
let now = Date.now();

const A = '198.51.100.0/24';
const B = '203.0.113.0/24';
const C = '192.0.2.0/24';
const FRESH = '2001:db8:0:1::/64';

function transaction(clientId = 'client-1'): AuthorizationTransaction {
  return {
    clientId,
    redirectUri: 'http://127.0.0.1/cb',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGcSuJZ-cM',
    state: 's',
    expiresAt: now + TTL,
  };
}

function client(clientId: string): RegisteredClient {
  return { clientId, redirectUris: [], issuedAt: now, expiresAt: now + TTL };
}

function storeContract(open: OpenStore) {
  let store: OAuthStore;
  let close: () => Promise<void>;
  let serial = 0;
  beforeEach(async () => {
    ({ store, close } = await open());
  });
  afterEach(() => close?.());

  /** Saves a login transaction from `network`, one millisecond after the previous one. */
  async function login(
    network: string,
    quotas: Omit<LoginAdmission, 'network' | 'now'>,
    clientId?: string,
  ): Promise<string> {
    serial += 1;
    now += 1_000;
    const id = `txn-${serial}`;
    await store.saveTransaction(id, transaction(clientId), { network, now, ...quotas });
    return id;
  }

  /** Which of `ids` are still pending (consuming them, so call it last). */
  async function pending(ids: string[]): Promise<string[]> {
    const left: string[] = [];
    for (const id of ids) if ((await store.consumeTransaction(id)) !== undefined) left.push(id);
    return left;
  }

  it('at the cap, evicts the oldest form of the network holding the most, not a newcomer', async () => {
    const quotas = { cap: 4, perNetwork: 10, perClient: 10 };
    const a = [await login(A, quotas), await login(A, quotas), await login(A, quotas)];
    const b = await login(B, quotas);
    const fresh = await login(FRESH, quotas);
    const again = await login(FRESH, quotas);
    expect(await pending([...a, b, fresh, again])).toEqual([a[2], b, fresh, again]);
  });

  it("at a network's quota, evicts that network's own oldest form", async () => {
    const quotas = { cap: 100, perNetwork: 2, perClient: 100 };
    const a = [await login(A, quotas), await login(A, quotas)];
    const b = await login(B, quotas);
    const a3 = await login(A, quotas);
    expect(await pending([...a, b, a3])).toEqual([a[1], b, a3]);
  });

  it("at a client's quota, evicts the client's oldest form from its heaviest network", async () => {
    const quotas = { cap: 100, perNetwork: 100, perClient: 3 };
    const b = await login(B, quotas, 'victim');
    const a = [await login(A, quotas, 'victim'), await login(A, quotas, 'victim')];
    const other = await login(A, quotas, 'other');
    const c = await login(C, quotas, 'victim');
    expect(await pending([b, ...a, other, c])).toEqual([b, a[1], other, c]);
  });

  it('frees a slot when a form is used, and forgets expired forms before counting', async () => {
    const quotas = { cap: 2, perNetwork: 10, perClient: 10 };
    const first = await login(A, quotas);
    const second = await login(A, quotas);
    expect(await store.consumeTransaction(first)).toBeDefined();
    const third = await login(B, quotas);
    expect(await pending([second, third])).toEqual([second, third]);
    const old = [await login(A, quotas), await login(A, quotas)];
    now += TTL;
    const later = [await login(B, quotas), await login(B, quotas)];
    expect(await pending([...old, ...later])).toEqual(later);
  });

  it('evicts only never-used clients, from the heaviest network, and refuses once all are used', async () => {
    const admit = (id: string, network: string) => {
      now += 1_000;
      return store.saveClient(client(id), { network, now, cap: 4 });
    };
    for (const [id, network] of [
      ['a1', A],
      ['a2', A],
      ['a3', A],
      ['b1', B],
    ] as const) {
      expect(await admit(id, network)).toBe(true);
    }
    await store.markClientUsed('a1');
    expect(await admit('fresh', FRESH)).toBe(true);
    const live = async (ids: string[]) => {
      const found: string[] = [];
      for (const id of ids) if ((await store.getClient(id)) !== undefined) found.push(id);
      return found;
    };
    // A still holds the most never-used clients (a2, a3): its oldest of them made room.
    expect(await live(['a1', 'a2', 'a3', 'b1', 'fresh'])).toEqual(['a1', 'a3', 'b1', 'fresh']);
    for (const id of ['a3', 'b1', 'fresh']) await store.markClientUsed(id);
    expect(await admit('refused', C)).toBe(false);
    expect(await live(['a1', 'a3', 'b1', 'fresh', 'refused'])).toEqual(['a1', 'a3', 'b1', 'fresh']);
    // Expired clients, used or not, make room.
    now += TTL;
    expect(await admit('later', C)).toBe(true);
  });

  it('breaks a tie between networks as FairPool does: the one that reached the count first', async () => {
    const quotas = { cap: 4, perNetwork: 10, perClient: 10 };
    const a1 = await login(A, quotas);
    const b = [await login(B, quotas), await login(B, quotas)];
    const a2 = await login(A, quotas);
    // A and B hold two each; B reached two first, so B's oldest goes.
    const fresh = await login(FRESH, quotas);
    // Now A holds the most.
    const again = await login(C, quotas);
    expect(await pending([a1, ...b, a2, fresh, again])).toEqual([b[1], a2, fresh, again]);
  });
}

describeEachStore('capped pools', storeContract);
