import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest, forbidden, invalidSyntax, notFound, ScimError } from './errors.js';
import type { Access, ScimResponse, ScimService } from './service.js';

export const BULK_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
export const MAX_BULK_OPERATIONS = 1000;
export const MAX_BULK_PAYLOAD = 1_048_576;

type Method = 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Resource = 'Users' | 'Groups' | 'Roles';
type BulkOperation = {
  method: Method;
  path: string;
  bulkId?: string;
  /** RFC 7644 §3.7: the version a PUT, PATCH or DELETE expects, as `If-Match` does. */
  version?: string;
  data?: unknown;
  resource: Resource | undefined;
};

const ORDER: readonly (Resource | undefined)[] = ['Users', 'Groups', 'Roles', undefined];
const OPERATION_VERB = {
  POST: 'create',
  PUT: 'update',
  PATCH: 'update',
  DELETE: 'delete',
} as const;

/** WSO2's /scim2/Bulk: users, then groups, then roles; `bulkId:` references; failOnErrors. */
export async function processBulk(
  service: ScimService,
  body: unknown,
  access: Access,
): Promise<JsonObject> {
  const { operations, failOnErrors } = readBulkRequest(body);
  const created = new Map<string, string>();
  const results: JsonObject[] = [];
  let errors = 0;
  const ordered = ORDER.flatMap((r) => operations.filter((op) => op.resource === r));
  for (const operation of ordered) {
    if (failOnErrors > 0 && errors >= failOnErrors) break;
    const response = await runOperation(service, operation, access, created);
    if (response.status >= 400) errors++;
    const id = typeof response.body?.id === 'string' ? response.body.id : undefined;
    if (operation.method === 'POST' && operation.bulkId && id) created.set(operation.bulkId, id);
    // RFC 7644 §3.7.3: `status` is the HTTP status as a string; a failed operation carries its
    // SCIM error as `response`, a successful one its resource's version (not WSO2's
    // `status: {code}` and stringified body, see the README).
    const failed = response.status >= 400;
    results.push({
      method: operation.method,
      ...(operation.bulkId ? { bulkId: operation.bulkId } : {}),
      ...(response.location && !failed ? { location: response.location } : {}),
      ...(response.etag && !failed ? { version: response.etag } : {}),
      status: String(response.status),
      ...(failed && response.body ? { response: response.body } : {}),
    });
  }
  return { schemas: [BULK_RESPONSE], Operations: results };
}

function readBulkRequest(body: unknown): { operations: BulkOperation[]; failOnErrors: number } {
  if (!isJsonObject(body) || !Array.isArray(body.Operations)) {
    throw invalidSyntax('Operations attribute is missing or is not a valid JSON array.');
  }
  if (body.Operations.length > MAX_BULK_OPERATIONS) {
    throw new ScimError(
      413,
      `The number of operations in the bulk request exceeds the maxOperations: ${MAX_BULK_OPERATIONS}`,
      'tooMany',
    );
  }
  const seen = new Set<string>();
  const operations = body.Operations.map((raw): BulkOperation => {
    if (!isJsonObject(raw)) throw invalidSyntax('Each bulk operation must be a JSON object.');
    const method = String(raw.method ?? '').toUpperCase();
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) {
      throw badRequest(`Unsupported bulk method: ${String(raw.method)}`, 'invalidSyntax');
    }
    if (typeof raw.path !== 'string') throw invalidSyntax('Each bulk operation needs a path.');
    const bulkId = typeof raw.bulkId === 'string' && raw.bulkId ? raw.bulkId : undefined;
    if (method === 'POST' && !bulkId) {
      throw badRequest('Bulk request error. Required attribute BULK_ID is missing in the request');
    }
    if (bulkId) {
      if (seen.has(bulkId)) throw badRequest(`Duplicate bulkId found: ${bulkId}`);
      seen.add(bulkId);
    }
    return {
      method: method as Method,
      path: raw.path,
      ...(bulkId ? { bulkId } : {}),
      ...(typeof raw.version === 'string' ? { version: raw.version } : {}),
      data: raw.data,
      resource: resourceOf(raw.path),
    };
  });
  const failOnErrors = Number.isInteger(body.failOnErrors) ? (body.failOnErrors as number) : 0;
  return { operations, failOnErrors };
}

function resourceOf(path: string): Resource | undefined {
  if (path.includes('/Users')) return 'Users';
  if (path.includes('/Groups')) return 'Groups';
  if (path.includes('/Roles')) return 'Roles';
  return undefined;
}

async function runOperation(
  service: ScimService,
  operation: BulkOperation,
  access: Access,
  created: ReadonlyMap<string, string>,
): Promise<ScimResponse> {
  try {
    if (!operation.resource)
      throw notFound('Specified resource (e.g., User) or endpoint does not exist.');
    const scope = `internal_bulk_${operation.resource.slice(0, -1).toLowerCase()}_${OPERATION_VERB[operation.method]}`;
    if (!access.granted && !access.scopes.has(scope)) throw forbidden();
    const data = resolveReferences(operation.data, created);
    const id = idOf(operation.path, created);
    const version = operation.version;
    // Inside a bulk request, role operations were authorized by the bulk scopes above; what
    // they grant is still limited to what the caller holds.
    const roleAccess: Access = { ...access, granted: true };
    switch (`${operation.method} ${operation.resource}`) {
      case 'POST Users':
        return await service.createUser('user', data);
      case 'PUT Users':
        return await service.replaceUser('user', id, data, version);
      case 'PATCH Users':
        return await service.patchUser('user', id, data, version);
      case 'DELETE Users':
        return service.deleteUser('user', id, version);
      case 'POST Groups':
        return service.createGroup(data);
      case 'PUT Groups':
        return service.replaceGroup(id, data, access, version);
      case 'PATCH Groups':
        return service.patchGroup(id, data, access, version);
      case 'DELETE Groups':
        return service.deleteGroup(id, version);
      case 'POST Roles':
        return service.createRole(data, roleAccess);
      case 'PUT Roles':
        return service.replaceRole(id, data, roleAccess);
      case 'PATCH Roles':
        return service.patchRole(id, data, roleAccess);
      default:
        return service.deleteRole(id);
    }
  } catch (error) {
    if (error instanceof ScimError) return { status: error.status, body: error.toBody() };
    throw error;
  }
}

function idOf(path: string, created: ReadonlyMap<string, string>): string {
  const last = path.split('/').filter(Boolean).pop() ?? '';
  return last.startsWith('bulkId:') ? (created.get(last.slice(7)) ?? last) : last;
}

/** Replaces `"bulkId:<id>"` strings anywhere in the data with the created resource ids. */
function resolveReferences(data: unknown, created: ReadonlyMap<string, string>): unknown {
  if (typeof data === 'string' && data.startsWith('bulkId:')) {
    return created.get(data.slice(7)) ?? data;
  }
  if (Array.isArray(data)) return data.map((d) => resolveReferences(d, created));
  if (isJsonObject(data)) {
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, resolveReferences(v, created)]),
    );
  }
  return data;
}
