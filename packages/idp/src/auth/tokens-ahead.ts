import type { KeyObject } from 'node:crypto';
import type { IssuedToken, TokenRequest } from './tokens.js';

/** Requests whose next token is kept signed at most (one token each). */
const MAX_REQUESTS_AHEAD = 64;

type Ahead = { kid: string; issued: IssuedToken | undefined };

/**
 * Client-credentials tokens signed ahead: once a client got a token, the next one for the same
 * request (client, scopes, audiences) is signed on libuv's thread pool, so that the RSA
 * signature (~0.2 ms, the token endpoint's largest cost) is off the path of the request that
 * will take it. A service that asks for a token per call (the SCIM MCP server, for every tool
 * call) then gets each at once, while its previous call's work runs on another core.
 *
 * A token signed ahead is handed out only as the token the request would get if signed now:
 * same claims (`iat` of this second, this issuer, lifetime) and the active key; otherwise it
 * is dropped and the request signs its own. Each is handed out once (its own `jti`); what the
 * request authorises (client authentication, scopes) is decided before, as for any token.
 */
export class TokensAhead {
  private readonly ahead = new Map<string, Ahead>();

  constructor(
    private readonly sign: (
      input: TokenRequest,
      kid: string,
      key: KeyObject,
      onEventLoop: boolean,
    ) => Promise<IssuedToken>,
    private readonly isCurrent: (issued: IssuedToken) => boolean,
  ) {}

  /**
   * The token for `input` with key `kid`: the one signed ahead if it is ready and current, else
   * one signed now (`onEventLoop`: see `signRs256`); then the next one starts signing on the
   * thread pool, unless one is ready or under way.
   */
  async issue(
    input: TokenRequest,
    kid: string,
    key: KeyObject,
    onEventLoop: boolean,
  ): Promise<IssuedToken> {
    const id = requestKey(input);
    const issued = this.take(id, kid) ?? (await this.sign(input, kid, key, onEventLoop));
    this.prepare(id, input, kid, key);
    return issued;
  }

  private take(id: string, kid: string): IssuedToken | undefined {
    const ahead = this.ahead.get(id);
    // Still being signed: it will serve the request after this one.
    if (!ahead?.issued) return undefined;
    this.ahead.delete(id);
    return ahead.kid === kid && this.isCurrent(ahead.issued) ? ahead.issued : undefined;
  }

  private prepare(id: string, input: TokenRequest, kid: string, key: KeyObject): void {
    if (this.ahead.has(id)) return;
    if (this.ahead.size >= MAX_REQUESTS_AHEAD) this.dropStale();
    if (this.ahead.size >= MAX_REQUESTS_AHEAD) return;
    const ahead: Ahead = { kid, issued: undefined };
    this.ahead.set(id, ahead);
    this.sign(input, kid, key, false).then(
      (issued) => {
        ahead.issued = issued;
      },
      () => {
        if (this.ahead.get(id) === ahead) this.ahead.delete(id);
      },
    );
  }

  /** Forgets the tokens that no request can take any more (signed in an earlier second). */
  private dropStale(): void {
    for (const [id, ahead] of this.ahead) {
      if (ahead.issued && !this.isCurrent(ahead.issued)) this.ahead.delete(id);
    }
  }
}

function requestKey(input: TokenRequest): string {
  return JSON.stringify([input.clientId, input.subject, input.scopes, input.audiences ?? []]);
}
