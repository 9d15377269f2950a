import type { VerifiedToken } from './auth/verifier.js';
import type { McpCall } from './jsonrpc.js';
import { authenticationRequired, insufficientScope, type Refusal } from './policies/challenge.js';
import type { ProxyRuntime } from './registry.js';

export type Admission =
  | { admitted: true; token: VerifiedToken | undefined }
  | { admitted: false; refusal: Refusal; token: VerifiedToken | undefined };

/**
 * Runs a proxy's policies for one request: `mcp-auth` decides whether a token is needed and
 * validates it; `mcp-authz` decides whether the call is governed and, if so, whether the token
 * satisfies every matching rule. Nothing here touches the upstream.
 */
export async function admit(
  runtime: ProxyRuntime,
  httpMethod: string,
  call: McpCall | undefined,
  authorization: string | undefined,
): Promise<Admission> {
  const { auth, authz } = runtime;
  let token: VerifiedToken | undefined;

  if (auth && httpMethod !== 'OPTIONS') {
    const needed = call
      ? auth.callRequiresAuth(call)
      : httpMethod === 'POST' || auth.transportRequiresAuth();
    if (needed) {
      const outcome = await auth.authenticate(authorization);
      if (!outcome.ok) return { admitted: false, refusal: outcome.refusal, token };
      token = outcome.token;
    }
  }
  if (!authz || !call) return { admitted: true, token };

  let decision = authz.decide(call, token);
  if (decision.governed && !token) {
    // Governance is decided before identity (WSO2 #2842): only a governed call needs a caller,
    // even when mcp-auth's own switches let this call through anonymously.
    if (!auth) {
      return {
        admitted: false,
        refusal: authenticationRequired(runtime.resourceMetadataUrl),
        token,
      };
    }
    const outcome = await auth.authenticate(authorization);
    if (!outcome.ok) return { admitted: false, refusal: outcome.refusal, token };
    token = outcome.token;
    decision = authz.decide(call, token);
  }
  if (decision.governed && !decision.allowed) {
    const refusal = insufficientScope(
      runtime.resourceMetadataUrl,
      decision.missingScopes,
      'mcp-authz denied the call',
    );
    return { admitted: false, refusal, token };
  }
  return { admitted: true, token };
}
