import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

/**
 * A single eq/sw comparison with at most 256 matches is answered on the server's thread, a
 * broader one by the search worker: both must give the same totals and the same pages.
 */
describe('narrow and broad searches page alike', async () => {
  const idp = await startTestIdp();
  // 300 users edge000 … edge299, created in an order unrelated to their ids.
  idp.admin.service.users.seed(
    Array.from({ length: 300 }, (_, i) => ({
      userName: `edge${String(299 - i).padStart(3, '0')}`,
    })),
  );
  const search = async (filter: string, startIndex: number, count: number) => {
    const response = await idp.scim('POST', '/Users/.search', {
      body: { schemas: [SEARCH], filter, startIndex, count },
    });
    expect(response.status).toBe(200);
    const resources = (response.body.Resources ?? []) as { id: string; userName: string }[];
    return { total: response.body.totalResults, resources };
  };

  it('a page of a narrow search is the same slice of the id order as the broad search', async () => {
    // Every id in id order, from the worker (300 matches), in pages of at most 100.
    const pages = await Promise.all(
      [1, 101, 201].map((at) => search('userName sw "edge"', at, 100)),
    );
    expect(pages.map((page) => page.total)).toEqual([300, 300, 300]);
    const narrowIds = pages
      .flatMap((page) => page.resources)
      .filter((user) => user.userName.startsWith('edge1'))
      .map((user) => user.id);
    expect(narrowIds).toHaveLength(100);
    const page = await search('userName sw "EDGE1"', 11, 7);
    expect(page.total).toBe(100);
    expect(page.resources.map((user) => user.id)).toEqual(narrowIds.slice(10, 17));
    expect((await search('userName sw "edge1"', 99, 5)).resources).toHaveLength(2);
    expect(await search('userName sw "edge1"', 101, 5)).toEqual({ total: 100, resources: [] });
    expect((await search('userName sw "edge1"', 1, 0)).resources).toEqual([]);
  });

  it('answers around the 256-match bound and for eq', async () => {
    // 256 and 257 matches: the last narrow search and the first broad one.
    const seed = (prefix: string, n: number) =>
      idp.admin.service.users.seed(
        Array.from({ length: n }, (_, i) => ({
          userName: `${prefix}${String(i).padStart(3, '0')}`,
        })),
      );
    seed('bound-a', 256);
    seed('bound-b', 257);
    for (const [prefix, total] of [
      ['bound-a', 256],
      ['bound-b', 257],
    ] as const) {
      const last = await search(`userName sw "${prefix}"`, total, 5);
      expect(last.total).toBe(total);
      expect(last.resources).toHaveLength(1);
    }
    const exact = await search('userName eq "Edge042"', 1, 5);
    expect(exact.total).toBe(1);
    expect(exact.resources[0]?.userName).toBe('edge042');
  });
});
