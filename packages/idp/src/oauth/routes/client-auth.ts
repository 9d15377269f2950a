import { basicCredentials } from '@mcp-identity/common';
import type { FastifyRequest } from 'fastify';
import type { Application } from '../../store/apps.js';
import type { OAuthClients } from '../document-clients.js';
import { failure } from './failures.js';

/**
 * The client of a token, revocation or introspection request: HTTP Basic (RFC 6749 §2.3.1),
 * client_secret_post, or a public client naming only its id (a registered one, or the URL of
 * its metadata document).
 */
export async function authenticateClient(
  request: FastifyRequest,
  form: URLSearchParams,
  clients: OAuthClients,
): Promise<Application> {
  const header = request.headers.authorization;
  const basic = authScheme(header) === 'basic';
  if (header && !basic) {
    throw failure.unsupportedClientAuth();
  }
  if (basic && form.has('client_secret')) {
    throw failure.twoClientAuthMethods();
  }
  let clientId: string | null;
  let secret: string | null;
  if (basic) {
    const credentials = basicClientCredentials(header);
    if (!credentials) throw failure.clientAuthFailed(basic);
    clientId = credentials.clientId;
    secret = credentials.clientSecret;
  } else {
    clientId = form.get('client_id');
    secret = form.get('client_secret');
  }
  if (!clientId) throw failure.clientAuthFailed(basic);
  if (secret === null) {
    const app = await clients.find(clientId);
    if (app && !app.confidential) return app;
    throw failure.clientAuthFailed(basic);
  }
  // One lookup: `authenticate` reads the application with its stored secret hash.
  const authenticated = await clients.authenticate(clientId, secret);
  if (!authenticated) throw failure.clientAuthFailed(basic);
  return authenticated;
}

/** RFC 7235 §2.1: the auth-scheme of a header, lower-cased (schemes are case-insensitive). */
export function authScheme(header: string | undefined): string | undefined {
  return header === undefined
    ? undefined
    : /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+)(?: |$)/.exec(header)?.[1]?.toLowerCase();
}

/**
 * OAuth client credentials of a `Basic` header (RFC 6749 §2.3.1): client id and secret are each
 * form-urlencoded before being joined, so they are decoded here; undefined when either does not
 * decode.
 */
export function basicClientCredentials(
  header: string | undefined,
): { clientId: string; clientSecret: string } | undefined {
  const credentials = basicCredentials(header);
  if (credentials === undefined) return undefined;
  try {
    return {
      clientId: formDecode(credentials.user),
      clientSecret: formDecode(credentials.password),
    };
  } catch {
    return undefined;
  }
}

/** application/x-www-form-urlencoded decoding of one value: `+` is a space. Throws on bad escapes. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}
