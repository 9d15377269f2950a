import {
  clientSecretBasic,
  isJsonObject,
  type JsonObject,
  type Logger,
  UnexpectedResponseError,
} from '@mcp-identity/common';
import { type Agent, fetch } from 'undici';
import type { IntrospectionConfig } from '../config.js';
import { trustedAgent } from './trusted-agent.js';

/** How an introspection request ended. */
export type Introspection =
  /** RFC 7662 §2.2: `active: true`, with the rest of the answer (the caller checks it). */
  | { kind: 'active'; claims: JsonObject }
  /** The authorization server says the token is not active: revoked, expired, unknown. */
  | { kind: 'inactive' }
  /** No usable answer (down, slow, refused the gateway's credentials): nothing is decided. */
  | { kind: 'unavailable'; retryAfterMs: number };

/**
 * The gateway as an RFC 7662 client of one key manager: `POST token=…` with its client
 * credentials (client_secret_basic). After a failed request the endpoint is not asked again
 * for `retryIntervalMs`: requests meanwhile are answered unavailable at once, so an endpoint
 * that is down costs no connection per caller.
 */
export class IntrospectionClient {
  private readonly dispatcher: Agent;
  private readonly authorization: string;
  private downUntil = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly keyManager: string,
    private readonly settings: IntrospectionConfig,
    private readonly timing: { timeoutMs: number; retryIntervalMs: number; now: () => number },
    private readonly logger: Logger,
  ) {
    this.dispatcher = trustedAgent(settings, timing.timeoutMs);
    this.authorization = clientSecretBasic(settings.clientId, settings.clientSecret);
  }

  async introspect(token: string): Promise<Introspection> {
    const now = this.timing.now();
    if (now < this.downUntil) return { kind: 'unavailable', retryAfterMs: this.downUntil - now };
    try {
      const response = await fetch(this.settings.endpoint, {
        method: 'POST',
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.timing.timeoutMs),
        headers: {
          authorization: this.authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
      });
      const body: unknown = await response.json().catch(() => undefined);
      // RFC 7662 §2.2: a 200 whose JSON object has the boolean `active`; anything else
      // (a 401 for the gateway's own credentials, an HTML error page) decides nothing.
      if (response.status !== 200 || !isJsonObject(body) || typeof body.active !== 'boolean') {
        throw new UnexpectedResponseError(
          `introspection endpoint answered ${response.status} without a valid answer`,
        );
      }
      return body.active ? { kind: 'active', claims: body } : { kind: 'inactive' };
    } catch (error) {
      this.downUntil = this.timing.now() + this.timing.retryIntervalMs;
      // The message names the endpoint's status or the network error, never the token.
      this.logger.warn(
        { keyManager: this.keyManager, err: (error as Error).message },
        'token introspection failed',
      );
      return { kind: 'unavailable', retryAfterMs: this.timing.retryIntervalMs };
    }
  }

  close(): Promise<void> {
    return this.dispatcher.destroy();
  }
}
