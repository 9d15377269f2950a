import type {
  OAuthStore,
  RefreshPresentation,
  RefreshTokenEntry,
  RefreshTokenUse,
} from '@mcp-identity/oauth';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachStore, type OpenStore } from './fixtures/stores.js';

/**
 * The refresh-token rule of `RefreshTokenUse`, one table for every store: exactly one of any
 * number of presentations of a token rotates it; one that arrived before that rotation or
 * within the race window after it is refused and leaves the family alone; one arriving later
 * is a replay and revokes the whole family, the successor the rotation stored included.
 */
const WINDOW_MS = 2_000;
// Real time: Redis entries expire by their own clock (PXAT).
const T0 = Date.now();
const DAY = 86_400_000;

let serial = 0;
function family(): { familyId: string; token: string; entry: RefreshTokenEntry } {
  serial += 1;
  return {
    familyId: `family-${serial}`,
    token: `token-${serial}`,
    entry: {
      familyId: `family-${serial}`,
      userId: 'user-1',
      clientId: 'client-1',
      scope: 'mcp:tools',
      expiresAt: T0 + DAY,
    },
  };
}

const look = (arrivedAt: number, raceWindowMs = WINDOW_MS): RefreshPresentation => ({
  arrivedAt,
  raceWindowMs,
});

function rotate(
  arrivedAt: number,
  successorHash: string,
  entry: RefreshTokenEntry,
  rotatedAt = arrivedAt,
  raceWindowMs = WINDOW_MS,
): RefreshPresentation {
  return {
    arrivedAt,
    raceWindowMs,
    rotation: { rotatedAt, successorHash, successor: { ...entry, expiresAt: rotatedAt + DAY } },
  };
}

const outcome = (use: RefreshTokenUse) => use.outcome;

function storeContract(open: OpenStore) {
  let store: OAuthStore;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await open());
  });
  afterAll(() => close?.());

  it('looks at a live token without changing it', async () => {
    const { token, entry } = family();
    await store.saveRefreshToken(token, entry);
    expect(await store.presentRefreshToken(token, look(T0))).toEqual({ outcome: 'live', entry });
    expect(outcome(await store.presentRefreshToken(token, look(T0 + 1)))).toBe('live');
  });

  it('rotates once, stores the successor with it, and refuses a concurrent presentation without revoking', async () => {
    const { token, entry } = family();
    await store.saveRefreshToken(token, entry);
    const rotated = await store.presentRefreshToken(token, rotate(T0, `${token}-next`, entry));
    expect(rotated).toEqual({ outcome: 'rotated', entry });
    // Arrived before the rotation, or within the window after it: a lost race.
    for (const arrivedAt of [T0 - 50, T0, T0 + WINDOW_MS - 1]) {
      expect(outcome(await store.presentRefreshToken(token, look(arrivedAt)))).toBe('raced');
      expect(
        outcome(await store.presentRefreshToken(token, rotate(arrivedAt, `${token}-x`, entry))),
      ).toBe('raced');
    }
    // The winner's successor is live, in the same family, and the loser's was never stored.
    expect(await store.presentRefreshToken(`${token}-next`, look(T0 + 1))).toEqual({
      outcome: 'live',
      entry: { ...entry, expiresAt: T0 + DAY },
    });
    expect(outcome(await store.presentRefreshToken(`${token}-x`, look(T0 + 1)))).toBe('unknown');
  });

  it('treats a presentation after the race window as reuse and revokes the family, successors included', async () => {
    const { token, entry } = family();
    await store.saveRefreshToken(token, entry);
    await store.presentRefreshToken(token, rotate(T0, `${token}-1`, entry));
    await store.presentRefreshToken(`${token}-1`, rotate(T0 + 10, `${token}-2`, entry));
    const replay = await store.presentRefreshToken(token, look(T0 + WINDOW_MS));
    expect(replay).toEqual({ outcome: 'reused', entry });
    for (const member of [token, `${token}-1`, `${token}-2`]) {
      expect(outcome(await store.presentRefreshToken(member, look(T0 + WINDOW_MS + 1)))).toBe(
        'unknown',
      );
    }
    expect(
      outcome(
        await store.presentRefreshToken(`${token}-2`, rotate(T0 + DAY / 2, `${token}-3`, entry)),
      ),
    ).toBe('unknown');
  });

  it('with a window of 0 keeps only presentations that arrived before the rotation', async () => {
    const { token, entry } = family();
    await store.saveRefreshToken(token, entry);
    await store.presentRefreshToken(token, rotate(T0, `${token}-1`, entry, T0 + 30, 0));
    expect(outcome(await store.presentRefreshToken(token, look(T0 + 29, 0)))).toBe('raced');
    expect(outcome(await store.presentRefreshToken(token, look(T0 + 30, 0)))).toBe('reused');
    expect(outcome(await store.presentRefreshToken(`${token}-1`, look(T0 + 31, 0)))).toBe(
      'unknown',
    );
  });

  it('gives exactly one rotation to 20 concurrent presentations', async () => {
    const { token, entry } = family();
    await store.saveRefreshToken(token, entry);
    const uses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.presentRefreshToken(token, rotate(T0 + i, `${token}-${i}`, entry)),
      ),
    );
    const winners = uses.flatMap((use, i) => (use.outcome === 'rotated' ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(uses.filter((use) => use.outcome === 'raced')).toHaveLength(19);
    const winner = `${token}-${winners[0]}`;
    for (let i = 0; i < 20; i += 1) {
      const successor = await store.presentRefreshToken(`${token}-${i}`, look(T0 + 100));
      expect(outcome(successor)).toBe(`${token}-${i}` === winner ? 'live' : 'unknown');
    }
  });

  it('refuses an expired token, and a revoked family takes the rotated successor along', async () => {
    const expired = family();
    await store.saveRefreshToken(expired.token, { ...expired.entry, expiresAt: T0 });
    expect(outcome(await store.presentRefreshToken(expired.token, look(T0)))).toBe('unknown');
    const { token, familyId, entry } = family();
    const bystander = family();
    await store.saveRefreshToken(token, entry);
    await store.saveRefreshToken(bystander.token, bystander.entry);
    await store.presentRefreshToken(token, rotate(T0, `${token}-1`, entry));
    await store.revokeFamily(familyId);
    expect(outcome(await store.presentRefreshToken(`${token}-1`, look(T0 + 1)))).toBe('unknown');
    expect(outcome(await store.presentRefreshToken(bystander.token, look(T0 + 1)))).toBe('live');
  });
}

describeEachStore('refresh-token rotation', storeContract);
