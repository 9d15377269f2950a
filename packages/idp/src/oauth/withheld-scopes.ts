import { addBounded, type Clock } from '@mcp-identity/common';

/** How long the IdP remembers the scopes it left out of a user's grant: a step-up follows its 403 within seconds. */
export const WITHHELD_SCOPES_WINDOW_MS = 5 * 60_000;

/** Grants remembered at most; the oldest is forgotten first. */
const MAX_REMEMBERED = 10_000;

interface Withheld {
  requested: string;
  granted: ReadonlySet<string>;
  withheld: ReadonlySet<string>;
  until: number;
}

/**
 * Step-up that ends (issue 40). A client following MCP's scope step-up asks again for the scopes
 * it holds plus the one a 403 named (SEP-2350's union); when the user's role lacks that scope,
 * narrowing (RFC 6749 §3.3) would grant the same token again and the client would ask again, in
 * a loop. So the IdP remembers, per client, user and resource, what was asked, granted and left
 * out; another request that would grant nothing new and asks again for a scope left out is
 * refused (`access_denied`, naming the scopes) instead of answered with the same grant. The very
 * same request again is a sign-in like the first (a client that lost its tokens), answered the
 * same way.
 */
export class WithheldScopes {
  private readonly grants = new Map<string, Withheld>();

  constructor(private readonly clock: Clock) {}

  /**
   * The scopes to refuse the request for (asked again, still left out), or undefined, in which
   * case the grant is remembered.
   */
  refusal(
    key: { clientId: string; userId: string; resource: string | undefined },
    requested: readonly string[],
    grantable: readonly string[],
    granted: readonly string[],
  ): string[] | undefined {
    const id = `${key.clientId}\0${key.userId}\0${key.resource ?? ''}`;
    const now = this.clock();
    const asked = [...requested].sort().join(' ');
    const withheld = grantable.filter((scope) => !granted.includes(scope));
    const before = this.grants.get(id);
    if (
      before &&
      before.until > now &&
      before.requested !== asked &&
      granted.every((scope) => before.granted.has(scope))
    ) {
      const again = withheld.filter((scope) => before.withheld.has(scope));
      if (again.length > 0) return again;
    }
    this.grants.delete(id);
    if (withheld.length > 0) {
      const entry = {
        requested: asked,
        granted: new Set(granted),
        withheld: new Set(withheld),
        until: now + WITHHELD_SCOPES_WINDOW_MS,
      };
      addBounded(this.grants, id, entry, MAX_REMEMBERED);
    }
    return undefined;
  }
}
