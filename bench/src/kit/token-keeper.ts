export interface IssuedToken {
  accessToken: string;
  /** Lifetime in seconds, as the token endpoint said (`expires_in`). */
  expiresIn: number | undefined;
}

/**
 * An access token for a long run: obtained again once 80% of its lifetime passed. While the
 * issuer is down (a soak kills it), the current token serves until it expires.
 */
export class TokenKeeper {
  private current: { token: string; renewAt: number; expiresAt: number } | undefined;
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly obtain: () => Promise<IssuedToken>,
    private readonly now: () => number = Date.now,
  ) {}

  async token(): Promise<string> {
    const now = this.now();
    if (!this.current || now >= this.current.renewAt) {
      this.renewing ??= this.renew().finally(() => {
        this.renewing = undefined;
      });
      const renewal = this.renewing;
      // A failed renewal matters only once the token in hand has expired.
      if (this.current && now < this.current.expiresAt) renewal.catch(() => undefined);
      else await renewal;
    }
    return (this.current as { token: string }).token;
  }

  private async renew(): Promise<void> {
    const issued = await this.obtain();
    const lifetimeMs = (issued.expiresIn ?? 300) * 1000;
    const now = this.now();
    this.current = {
      token: issued.accessToken,
      renewAt: now + lifetimeMs * 0.8,
      expiresAt: now + lifetimeMs,
    };
  }
}
