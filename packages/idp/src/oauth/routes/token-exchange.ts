import { ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from '@mcp-identity/common';
import { currentUserScopes } from '../../auth/subjects.js';
import { type AccessTokenClaims, isUserToken, type TokenService } from '../../auth/tokens.js';
import type { RoleStore } from '../../scim/roles.js';
import type { Application } from '../../store/apps.js';
import { failure } from './failures.js';
import { intersect, splitScope } from './scopes.js';

export type TokenExchangeDependencies = {
  tokens: TokenService;
  roles: RoleStore;
  knownScopes: readonly string[];
};

/**
 * RFC 8693 token exchange: an application the operator allows to delegate presents an access
 * token this IdP issued to a user and gets one for another resource, with the user as `sub` and
 * itself as the outermost actor (§4.1). Each step below refuses with the RFC's error.
 */
export async function exchangeToken(
  deps: TokenExchangeDependencies,
  client: Application,
  form: URLSearchParams,
): Promise<Record<string, unknown>> {
  const policy = requireExchanger(client);
  const request = readExchangeRequest(form);
  const subject = await verifySubject(deps.tokens, request.subjectToken);
  if (!audiences(subject).some((aud) => policy.subjectAudiences.includes(aud))) {
    throw failure.foreignSubjectAudience();
  }
  if (!policy.resources.includes(request.resource)) {
    throw failure.exchangeTargetRefused();
  }
  const scopes = grantedScopes(deps, client, subject, request.scope);
  const { token, expiresIn } = await deps.tokens.issue({
    clientId: client.clientId,
    subject: subject.sub,
    scopes,
    audiences: [request.resource],
    actor: { sub: client.clientId, ...(subject.act ? { act: subject.act } : {}) },
    notAfter: subject.exp,
  });
  return {
    access_token: token,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: expiresIn,
    // Always sent: it may differ from what was asked (RFC 6749 §5.1, RFC 8693 §2.2.1).
    scope: scopes.join(' '),
  };
}

/** The client holds the grant; confidential clients only (RFC 8693 §2.1 client authentication). */
function requireExchanger(client: Application) {
  if (!client.grantTypes.includes(TOKEN_EXCHANGE_GRANT) || !client.tokenExchange) {
    throw failure.grantNotAllowed(TOKEN_EXCHANGE_GRANT);
  }
  if (!client.confidential) throw failure.publicClientCredentials();
  return client.tokenExchange;
}

type ExchangeRequest = {
  subjectToken: string;
  resource: string;
  /** Null when absent: the subject token's scopes are asked for. */
  scope: string | null;
};

/**
 * RFC 8693 §2.1 parameters, each at most once (RFC 6749 §3.2). One target: `resource`, or
 * `audience` naming a resource identifier. The actor is the authenticated client, so
 * `actor_token` is refused rather than ignored.
 */
function readExchangeRequest(form: URLSearchParams): ExchangeRequest {
  const single = (name: string): string | null => {
    const values = form.getAll(name);
    if (values.length > 1) throw failure.repeatedParameter(name);
    return values[0] ?? null;
  };
  const subjectToken = single('subject_token');
  if (!subjectToken) throw failure.missingParameter('subject_token');
  const subjectTokenType = single('subject_token_type');
  if (!subjectTokenType) throw failure.missingParameter('subject_token_type');
  if (subjectTokenType !== ACCESS_TOKEN_TYPE)
    throw failure.unsupportedTokenType('subject_token_type');
  const requestedType = single('requested_token_type');
  if (requestedType !== null && requestedType !== ACCESS_TOKEN_TYPE) {
    throw failure.unsupportedTokenType('requested_token_type');
  }
  if (form.has('actor_token') || form.has('actor_token_type')) {
    throw failure.unsupportedParameter('actor_token');
  }
  const targets = [...form.getAll('resource'), ...form.getAll('audience')];
  if (targets.length === 0) throw failure.missingParameter('resource');
  if (targets.length > 1) throw failure.oneResource();
  return { subjectToken, resource: targets[0]!, scope: single('scope') };
}

/**
 * The subject token's claims: signed by one of this IdP's keys, this issuer, unexpired, not
 * revoked, its user still present and active (all `TokenService.verify`), and a user's token.
 * Refused as `invalid_grant` (RFC 6749 §5.2: the grant presented is invalid, expired or
 * revoked), as issue 41 and the token-exchange contract ask; RFC 8693 §2.2.2 would name
 * `invalid_request` for a subject token refused for any reason.
 */
async function verifySubject(tokens: TokenService, token: string): Promise<AccessTokenClaims> {
  const claims = await tokens.verify(token);
  if (!claims) throw failure.invalidSubjectToken();
  if (!isUserToken(claims)) throw failure.applicationSubjectToken();
  return claims;
}

const audiences = (claims: AccessTokenClaims): string[] =>
  typeof claims.aud === 'string' ? [claims.aud] : (claims.aud ?? []);

/**
 * Requested (default: the subject token's) ∩ the subject token's ∩ the client's ∩ what the
 * user's roles grant now. Known scopes not granted are dropped, the answer saying what was
 * granted (RFC 6749 §3.3); a scope the IdP does not know is `invalid_scope`.
 */
function grantedScopes(
  deps: TokenExchangeDependencies,
  client: Application,
  subject: AccessTokenClaims,
  requested: string | null,
): string[] {
  const held = splitScope(subject.scope);
  const asked = requested === null ? held : splitScope(requested);
  const unknown = asked.filter((scope) => !deps.knownScopes.includes(scope));
  if (unknown.length > 0) throw failure.unknownScope(unknown);
  const allowed = currentUserScopes(deps.roles, subject.sub);
  return intersect(intersect(asked, held), client.scopes).filter((scope) => allowed.has(scope));
}
