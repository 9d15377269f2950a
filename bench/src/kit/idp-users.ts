import { Agent, fetch } from 'undici';

/** Users per page: the IdP's advertised `maxResults`. */
const PAGE = 200;

/**
 * Every user at the IdP whose userName starts with `prefix` (userName → id), read straight from
 * its SCIM API (RFC 7644 §3.4.2, paged with startIndex/count), not through the stack under test.
 */
export async function usersWithPrefix(
  scimUrl: string,
  accessToken: string,
  prefix: string,
  ca: string,
): Promise<Map<string, string>> {
  const dispatcher = new Agent({ connect: { ca } });
  const users = new Map<string, string>();
  try {
    for (let startIndex = 1; ; startIndex += PAGE) {
      const query = new URLSearchParams({
        filter: `userName sw ${prefix}`,
        startIndex: String(startIndex),
        count: String(PAGE),
      });
      const response = await fetch(`${scimUrl}/Users?${query}`, {
        dispatcher,
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/scim+json' },
      });
      if (!response.ok) {
        throw new Error(`SCIM search answered ${response.status}: ${await response.text()}`);
      }
      const page = (await response.json()) as {
        totalResults: number;
        Resources?: { id: string; userName: string }[];
      };
      for (const user of page.Resources ?? []) users.set(user.userName, user.id);
      if ((page.Resources?.length ?? 0) === 0 || startIndex + PAGE > page.totalResults) break;
    }
    return users;
  } finally {
    await dispatcher.close();
  }
}
