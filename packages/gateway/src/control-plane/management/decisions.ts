import { compileSchema, gatewayError, keyPath } from '@mcp-identity/common';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { decodeJwt, type JWTPayload } from 'jose';
import { scopesOf, type VerifiedToken } from '../../auth/verifier.js';
import { explainAuthz } from '../../policies/mcp-authz.js';
import type { ProxyStore } from '../store.js';

/**
 * `POST /api/management/v1/mcp-proxies/{name}/decisions` (admin only): what the proxy's
 * `mcp-authz` would decide on a call, and why, by the code that decides real calls
 * (`explainAuthz`); nothing is sent upstream. An operator's way to try a rule on a token's
 * claims before a client meets it.
 */
const DECISION_REQUEST = Type.Object(
  {
    /** The token's claims, as the gateway would read them once verified. */
    claims: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** A JWT whose claims are read (not verified: verification is mcp-auth's, not a rule's). */
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 16384 })),
    call: Type.Object(
      {
        method: Type.String({ minLength: 1, maxLength: 256 }),
        tool: Type.Optional(Type.String({ maxLength: 2048 })),
        arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        era: Type.Optional(Type.String({ maxLength: 32 })),
      },
      { additionalProperties: false },
    ),
  },
  {
    additionalProperties: false,
    oneOf: [{ required: ['claims'] }, { required: ['token'] }],
  },
);
const decisionRequest = compileSchema(DECISION_REQUEST);

/** A verified token as the gateway would hold it, made of claims the operator gives. */
function tokenOf(payload: JWTPayload): VerifiedToken {
  const audiences = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
  return {
    payload,
    keyManager: '',
    issuer: payload.iss ?? '',
    audiences,
    scopes: scopesOf(payload),
    expiresAt: (payload.exp ?? 0) * 1000,
  };
}

export function registerDecisionsRoute(
  api: FastifyInstance,
  base: string,
  store: ProxyStore,
  now: () => number,
): void {
  api.post(`${base}/:id/decisions`, async (request, reply) => {
    const { id } = request.params as { id: string };
    let body: unknown;
    try {
      body = JSON.parse(String(request.body ?? ''));
    } catch {
      return gatewayError(reply, 400, 'request body is not valid JSON');
    }
    const issues = decisionRequest.issues(body);
    if (issues.length > 0 || !decisionRequest.is(body)) {
      const list = issues.map((i) => `${keyPath(i.path) || '(body)'}: ${i.message}`).join('; ');
      return gatewayError(reply, 400, `invalid decision request: ${list}`);
    }
    const proxy = await store.get(id);
    if (!proxy) {
      return gatewayError(reply, 404, `MCP proxy configuration with handle '${id}' not found`);
    }
    let payload: JWTPayload;
    try {
      payload = body.claims ?? decodeJwt(body.token ?? '');
    } catch {
      return gatewayError(reply, 400, 'token is not a JWT');
    }
    const authz = proxy.definition.spec.policies?.find((p) => p.name === 'mcp-authz');
    if (!authz) return { decision: 'allowed', status: 200, governed: false };
    return explainAuthz(authz.params ?? {}, id, now, tokenOf(payload), body.call);
  });
}
