import { isJsonObject, McpIdentityError } from '@mcp-identity/common';
import { parse as parseYaml } from 'yaml';
import { POLICIES } from '../policies/index.js';
import type { ValidationContext } from '../policies/policy.js';
import { isKnownPolicy, supportedVersions, validatePolicyParams } from '../policies/schemas.js';
import { DEFAULT_SECRET_ACCESS, secretRefProblem } from './secret-ref.js';

export type { ValidationContext } from '../policies/policy.js';

export const SUPPORTED_SPEC_VERSIONS = ['2025-06-18', '2025-11-25', '2026-07-28'] as const;
const HEALTH_PREFIX = '/_gateway-health';

export interface PolicyRef {
  name: string;
  version: string;
  params?: Record<string, unknown>;
}

/** A credential the gateway adds to every upstream request (`env:NAME` or `file:/abs/path`). */
export interface UpstreamAuth {
  header: string;
  secretRef: string;
}

/**
 * `upstream.tokenExchange` (issue 41): the caller's token is exchanged (RFC 8693) at
 * `tokenEndpoint` for one whose audience is `resource`, sent upstream in its place.
 */
export interface UpstreamTokenExchange {
  tokenEndpoint: string;
  /** The gateway's confidential application at the identity provider. */
  clientId: string;
  /** Its secret, `env:NAME` or `file:/abs/path`, read as `upstream.auth.secretRef` is. */
  clientSecretRef: string;
  /** RFC 8707 resource of the exchanged token (default: `upstream.url`). */
  resource?: string;
  /** Scopes asked for (default: none named, so the caller token's). */
  scopes?: string[];
}

/** An MCP proxy definition (`kind: Mcp`) after validation. */
export interface McpProxyDefinition {
  apiVersion: string;
  kind: 'Mcp';
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    displayName: string;
    version: string;
    context: string;
    specVersions?: string[];
    /** Deprecated singular form, still accepted. */
    specVersion?: string;
    upstream: { url: string; auth?: UpstreamAuth; tokenExchange?: UpstreamTokenExchange };
    tools?: unknown[];
    resources?: unknown[];
    prompts?: unknown[];
    policies?: PolicyRef[];
    deploymentState?: 'deployed' | 'undeployed';
  };
}

export type ValidationResult =
  | { ok: true; definition: McpProxyDefinition }
  | { ok: false; errors: Array<{ field: string; message: string }> };

const SPEC_KEYS = new Set([
  'displayName',
  'version',
  'context',
  'specVersions',
  'specVersion',
  'upstream',
  'tools',
  'resources',
  'prompts',
  'policies',
  'deploymentState',
]);

/** The largest definition, as the management API's body and once YAML aliases are expanded. */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

/** A YAML definition whose aliases expand it past `MAX_DEFINITION_BYTES`. */
export class DefinitionTooLargeError extends McpIdentityError {
  readonly code = 'ERR_DEFINITION_TOO_LARGE';
  constructor() {
    super(
      `the definition expands to more than ${MAX_DEFINITION_BYTES} bytes through its YAML aliases (*name); repeat less of it`,
    );
  }
}

/**
 * Whether `value` written as JSON would take more than `limit` characters, counted as a lower
 * bound without writing it, and given up as soon as it is over: a YAML alias is one object
 * shared by every place that names it, so an anchor referenced many times (or aliases of
 * aliases) is small in memory until something stores or serialises the definition. Every node
 * visited adds at least one character, so the walk itself is bounded by `limit`.
 */
function jsonLengthExceeds(value: unknown, limit: number): boolean {
  let length = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') length += item.length + 2;
    else if (Array.isArray(item)) {
      length += item.length + 1;
      for (const child of item) pending.push(child);
    } else if (item !== null && typeof item === 'object') {
      length += 1;
      for (const [key, child] of Object.entries(item)) {
        length += key.length + 4;
        pending.push(child);
      }
    } else length += String(item).length;
    if (length > limit) return true;
  }
  return false;
}

/**
 * Parses a request body: YAML or JSON by content type, anything else tries both (WSO2). YAML is
 * read as YAML 1.2 with the core schema whatever its `%YAML` directive says (no 1.1 merge keys,
 * which copy entries, and no timestamps or binary values a JSON definition could not hold),
 * and refused past `MAX_DEFINITION_BYTES` once its aliases are expanded.
 */
export function parseDefinitionBody(body: string, contentType: string | undefined): unknown {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') return JSON.parse(body);
  // YAML 1.2 is a superset of JSON, so one parser covers the fallback too.
  const parsed: unknown = parseYaml(body, {
    uniqueKeys: true,
    version: '1.2',
    schema: 'core',
    merge: false,
    // yaml's own bound (its default, stated): it also caps the parser's work per alias, which
    // would grow with the square of the aliases in a body without it.
    maxAliasCount: 100,
  });
  if (jsonLengthExceeds(parsed, MAX_DEFINITION_BYTES)) throw new DefinitionTooLargeError();
  return parsed;
}

function checkStringMap(value: unknown, field: string, add: (f: string, m: string) => void) {
  if (value === undefined) return;
  if (!isJsonObject(value)) return add(field, 'must be a map of strings');
  for (const [key, item] of Object.entries(value)) {
    if (/\s/.test(key)) add(`${field}.${key}`, 'key must not contain whitespace');
    if (typeof item !== 'string') add(`${field}.${key}`, 'must be a string');
  }
}

function checkContext(context: unknown, add: (f: string, m: string) => void) {
  if (typeof context !== 'string' || context === '') return add('spec.context', 'is required');
  if (!context.startsWith('/')) add('spec.context', 'must start with /');
  if (context.length > 1 && context.endsWith('/')) add('spec.context', 'must not end with /');
  if (context.length > 200) add('spec.context', 'must be at most 200 characters');
  if (!/^[A-Za-z0-9\-._~/]*$/.test(context)) {
    add('spec.context', 'may contain only letters, digits, -, ., _, ~ and /');
  }
  const segments = context.split('/');
  if (segments.some((s) => s === '.' || s === '..'))
    add('spec.context', 'must not contain . or .. segments');
  if (context === '/') add('spec.context', 'must not be /');
  const lower = context.toLowerCase();
  if (lower === HEALTH_PREFIX || lower.startsWith(`${HEALTH_PREFIX}/`)) {
    add('spec.context', `${HEALTH_PREFIX} is reserved for gateway health checks`);
  }
  if (lower === '/.well-known' || lower.startsWith('/.well-known/')) {
    add('spec.context', '/.well-known is reserved');
  }
}

/** Headers the connection or the gateway itself owns cannot carry the upstream credential. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'content-type',
  'content-encoding',
  'accept-encoding',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'proxy-connection',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

function checkUpstreamAuth(
  auth: unknown,
  context: ValidationContext,
  add: (f: string, m: string) => void,
) {
  if (!isJsonObject(auth))
    return add('spec.upstream.auth', 'must be an object with header and secretRef');
  for (const key of Object.keys(auth)) {
    if (key !== 'header' && key !== 'secretRef')
      add(`spec.upstream.auth.${key}`, 'is not supported');
  }
  const { header, secretRef } = auth;
  // RFC 9110 §5.1: a field name is a token.
  if (typeof header !== 'string' || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/.test(header)) {
    add('spec.upstream.auth.header', 'must be an HTTP header name');
  } else if (RESERVED_HEADERS.has(header.toLowerCase())) {
    add('spec.upstream.auth.header', `${header} is reserved`);
  }
  if (typeof secretRef !== 'string') return add('spec.upstream.auth.secretRef', 'is required');
  const problem = secretRefProblem(
    secretRef,
    context.secrets ?? DEFAULT_SECRET_ACCESS,
    context.resolveSecrets ?? false,
  );
  if (problem) add('spec.upstream.auth.secretRef', problem);
}

const TOKEN_EXCHANGE_KEYS = new Set([
  'tokenEndpoint',
  'clientId',
  'clientSecretRef',
  'resource',
  'scopes',
]);
/** RFC 6749 §3.3 scope-token. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An absolute URL, or why not. */
function absoluteUrl(value: unknown): URL | string {
  if (typeof value !== 'string' || value === '') return 'is required';
  try {
    return new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
}

function checkTokenEndpoint(value: unknown, add: (f: string, m: string) => void) {
  const at = 'spec.upstream.tokenExchange.tokenEndpoint';
  const url = absoluteUrl(value);
  if (typeof url === 'string') return add(at, url);
  // RFC 6749 §3.2: the token endpoint is TLS; plain HTTP only where nothing crosses a network.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))
    add(at, 'must be https (http only on a loopback host)');
  if (url.username || url.password) add(at, 'must not carry credentials');
  if (url.hash) add(at, 'must not have a fragment');
}

function checkTokenExchange(
  exchange: unknown,
  context: ValidationContext,
  add: (f: string, m: string) => void,
) {
  const at = 'spec.upstream.tokenExchange';
  if (!isJsonObject(exchange))
    return add(at, 'must be an object with tokenEndpoint, clientId and clientSecretRef');
  for (const key of Object.keys(exchange)) {
    if (!TOKEN_EXCHANGE_KEYS.has(key)) add(`${at}.${key}`, 'is not supported');
  }
  const { clientId, clientSecretRef, resource, scopes } = exchange;
  checkTokenEndpoint(exchange.tokenEndpoint, add);
  if (typeof clientId !== 'string' || !/^[\x20-\x7e]{1,256}$/.test(clientId))
    add(`${at}.clientId`, 'must be 1-256 printable ASCII characters');
  if (typeof clientSecretRef !== 'string') add(`${at}.clientSecretRef`, 'is required');
  else {
    const problem = secretRefProblem(
      clientSecretRef,
      context.secrets ?? DEFAULT_SECRET_ACCESS,
      context.resolveSecrets ?? false,
    );
    if (problem) add(`${at}.clientSecretRef`, problem);
  }
  if (resource !== undefined) {
    const url = absoluteUrl(resource);
    if (typeof url === 'string') add(`${at}.resource`, url);
    // RFC 8707 §2: an absolute URI without a fragment.
    else if (url.hash) add(`${at}.resource`, 'must not have a fragment');
  }
  if (scopes !== undefined) {
    if (!Array.isArray(scopes) || scopes.length === 0)
      add(`${at}.scopes`, "must be a non-empty list (leave it out for the caller token's scopes)");
    else
      scopes.forEach((scope, i) => {
        if (typeof scope !== 'string' || !SCOPE_TOKEN.test(scope))
          add(`${at}.scopes[${i}]`, 'must be a scope token (RFC 6749 §3.3)');
      });
  }
}

/** mcp-auth switches that let a call through without a caller token. */
const CALLER_SWITCHES = ['tools', 'resources', 'prompts', 'methods'];

/**
 * A proxy that exchanges tokens needs a caller token on every request (there is nothing to
 * exchange otherwise) and must never forward the caller's own: mcp-auth attached, no switch
 * exempting a call, `forwardToken` off.
 */
function checkExchangeNeeds(policies: unknown, add: (f: string, m: string) => void) {
  const at = 'spec.upstream.tokenExchange';
  const auth = Array.isArray(policies)
    ? policies.find((p) => isJsonObject(p) && p.name === 'mcp-auth')
    : undefined;
  if (!isJsonObject(auth)) return add(at, 'needs the mcp-auth policy: every request is exchanged');
  const params = isJsonObject(auth.params) ? auth.params : {};
  if (params.forwardToken === true)
    add(at, "mcp-auth forwardToken must be false: the caller's token never goes upstream");
  for (const name of CALLER_SWITCHES) {
    const group = params[name];
    if (!isJsonObject(group)) continue;
    const exempts =
      group.enabled === false || (Array.isArray(group.exceptions) && group.exceptions.length > 0);
    if (exempts)
      add(at, `mcp-auth ${name} must not exempt calls: each request needs a token to exchange`);
  }
}

function checkUpstream(
  upstream: unknown,
  context: ValidationContext,
  add: (f: string, m: string) => void,
) {
  if (!isJsonObject(upstream)) return add('spec.upstream', 'is required');
  for (const key of Object.keys(upstream)) {
    if (key !== 'url' && key !== 'auth' && key !== 'tokenExchange') {
      add(`spec.upstream.${key}`, 'is not supported (only url, auth and tokenExchange)');
    }
  }
  if (upstream.auth !== undefined) checkUpstreamAuth(upstream.auth, context, add);
  if (upstream.tokenExchange !== undefined) {
    checkTokenExchange(upstream.tokenExchange, context, add);
    const header = isJsonObject(upstream.auth) ? upstream.auth.header : undefined;
    if (typeof header === 'string' && header.toLowerCase() === 'authorization')
      add('spec.upstream.auth.header', 'Authorization carries the exchanged token (tokenExchange)');
  }
  if (typeof upstream.url !== 'string' || upstream.url === '') {
    return add('spec.upstream.url', 'is required');
  }
  let url: URL;
  try {
    url = new URL(upstream.url);
  } catch {
    return add('spec.upstream.url', 'must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    add('spec.upstream.url', 'scheme must be http or https');
  }
  if (!url.hostname) add('spec.upstream.url', 'must have a host');
  if (url.username || url.password) add('spec.upstream.url', 'must not carry credentials');
}

function checkSpecVersions(spec: Record<string, unknown>, add: (f: string, m: string) => void) {
  const supported = SUPPORTED_SPEC_VERSIONS.join(', ');
  if (spec.specVersions !== undefined) {
    if (!Array.isArray(spec.specVersions) || spec.specVersions.length === 0) {
      add('spec.specVersions', 'must be a non-empty list');
    } else {
      spec.specVersions.forEach((v, i) => {
        if (!(SUPPORTED_SPEC_VERSIONS as readonly unknown[]).includes(v)) {
          add(`spec.specVersions[${i}]`, `unsupported MCP spec version (supported: ${supported})`);
        }
      });
    }
  }
  if (
    spec.specVersion !== undefined &&
    !(SUPPORTED_SPEC_VERSIONS as readonly unknown[]).includes(spec.specVersion)
  ) {
    add('spec.specVersion', `unsupported MCP spec version (supported: ${supported})`);
  }
}

function checkCatalogue(
  spec: Record<string, unknown>,
  key: 'tools' | 'resources' | 'prompts',
  required: string[],
  add: (f: string, m: string) => void,
) {
  const list = spec[key];
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) return add(`spec.${key}`, 'must be a list');
  for (const [i, item] of list.entries()) {
    if (!isJsonObject(item)) {
      add(`spec.${key}[${i}]`, 'must be an object');
      continue;
    }
    for (const field of required) {
      if (typeof item[field] !== 'string' || item[field] === '') {
        add(`spec.${key}[${i}].${field}`, 'is required');
      }
    }
  }
}

function checkPolicies(
  policies: unknown,
  context: ValidationContext,
  add: (f: string, m: string) => void,
) {
  if (policies === undefined || policies === null) return;
  if (!Array.isArray(policies)) return add('spec.policies', 'must be a list');
  const seen = new Set<string>();
  for (const [i, policy] of policies.entries()) {
    checkPolicy(policy, `spec.policies[${i}]`, seen, context, add);
  }
}

function checkPolicy(
  policy: unknown,
  at: string,
  seen: Set<string>,
  context: ValidationContext,
  add: (f: string, m: string) => void,
) {
  if (!isJsonObject(policy)) return add(at, 'must be an object');
  for (const key of Object.keys(policy)) {
    if (!['name', 'version', 'params'].includes(key)) add(`${at}.${key}`, 'is not supported');
  }
  const { name, version, params } = policy;
  if (typeof name !== 'string' || name === '') return add(`${at}.name`, 'is required');
  if (!isKnownPolicy(name)) return add(`${at}.name`, `unknown policy '${name}'`);
  if (seen.has(name)) add(`${at}.name`, `policy '${name}' is attached more than once`);
  seen.add(name);
  if (typeof version !== 'string' || !/^v\d+$/.test(version)) {
    return add(`${at}.version`, 'must be a major version such as v1');
  }
  if (!supportedVersions(name).includes(version)) {
    return add(
      `${at}.version`,
      `unsupported version (supported: ${supportedVersions(name).join(', ')})`,
    );
  }
  if (params !== undefined && !isJsonObject(params))
    return add(`${at}.params`, 'must be an object');
  for (const message of validatePolicyParams(name, version, params, at)) {
    const colon = message.indexOf(': ');
    add(message.slice(0, colon), message.slice(colon + 2));
  }
  for (const [field, message] of POLICIES.get(name)?.check?.(params ?? {}, context) ?? []) {
    add(`${at}.params.${field}`, message);
  }
}

/** Validates a parsed definition, collecting every problem with its field path. */
export function validateDefinition(
  input: unknown,
  context: ValidationContext = {},
): ValidationResult {
  const errors: Array<{ field: string; message: string }> = [];
  const add = (field: string, message: string) => {
    errors.push({ field, message });
  };
  if (!isJsonObject(input))
    return { ok: false, errors: [{ field: '(root)', message: 'must be an object' }] };
  if (
    typeof input.apiVersion !== 'string' ||
    !/^gateway\.api-platform\.[a-z0-9.-]+\/v1$/.test(input.apiVersion)
  ) {
    add('apiVersion', 'must be gateway.api-platform.<vendor>/v1');
  }
  if (input.kind !== 'Mcp') add('kind', "unsupported configuration kind (only 'Mcp' is supported)");
  const metadata = input.metadata;
  if (!isJsonObject(metadata)) {
    add('metadata', 'is required');
  } else {
    const { name } = metadata;
    if (typeof name !== 'string' || name === '') add('metadata.name', 'is required');
    else if (name.length > 253 || /[\s/}{\\?#%\p{Cc}]/u.test(name)) {
      add(
        'metadata.name',
        'must not contain whitespace, /, \\, {, }, ?, #, % or control characters',
      );
    }
    checkStringMap(metadata.labels, 'metadata.labels', add);
    checkStringMap(metadata.annotations, 'metadata.annotations', add);
  }
  const spec = input.spec;
  if (!isJsonObject(spec)) {
    add('spec', 'is required');
  } else {
    for (const key of Object.keys(spec)) {
      if (!SPEC_KEYS.has(key)) add(`spec.${key}`, 'is not supported by this gateway');
    }
    const { displayName, version } = spec;
    if (typeof displayName !== 'string' || displayName === '')
      add('spec.displayName', 'is required');
    else if (displayName.length > 100 || !/^[a-zA-Z0-9\-_. ]+$/.test(displayName)) {
      add('spec.displayName', 'must be 1-100 letters, digits, spaces, -, _ or .');
    }
    if (typeof version !== 'string' || version === '') add('spec.version', 'is required');
    else if (!/^v?\d+(\.\d+)?(\.\d+)?$/.test(version)) add('spec.version', 'must look like v1.0');
    checkContext(spec.context, add);
    checkSpecVersions(spec, add);
    checkUpstream(spec.upstream, context, add);
    checkCatalogue(spec, 'tools', ['name'], add);
    checkCatalogue(spec, 'resources', ['uri', 'name'], add);
    checkCatalogue(spec, 'prompts', ['name'], add);
    checkPolicies(spec.policies, context, add);
    if (isJsonObject(spec.upstream) && spec.upstream.tokenExchange !== undefined)
      checkExchangeNeeds(spec.policies, add);
    if (
      spec.deploymentState !== undefined &&
      !['deployed', 'undeployed'].includes(spec.deploymentState as string)
    ) {
      add('spec.deploymentState', 'must be deployed or undeployed');
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, definition: input as unknown as McpProxyDefinition };
}

/** Whether the definition uses the deprecated singular `specVersion`. */
export function usesDeprecatedSpecVersion(definition: McpProxyDefinition): boolean {
  return definition.spec.specVersion !== undefined && definition.spec.specVersions === undefined;
}
