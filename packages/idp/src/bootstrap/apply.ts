import { readFile } from 'node:fs/promises';
import { McpIdentityError } from '@mcp-identity/common';
import { parse as parseYaml } from 'yaml';
import { ScimError } from '../scim/errors.js';
import { KNOWN_SCOPES } from '../scim/scopes.js';
import type { ScimService } from '../scim/service.js';
import type { AppStore } from '../store/apps.js';
import type { ApiResourceStore } from '../store/resources.js';
import { BOOTSTRAP_DOCUMENT, type BootstrapDocument, bootstrapProblems } from './schema.js';

export type { BootstrapDocument } from './schema.js';

export type BootstrapResult = {
  /** Applications created by this run, with their secrets (shown once). */
  createdApplications: { name: string; clientId: string; clientSecret?: string }[];
};

/** Used when no bootstrap file is given: the custom attributes the SCIM tools write. */
export const DEFAULT_BOOTSTRAP: BootstrapDocument = {
  customAttributes: [
    { name: 'customerTier', type: 'string' },
    { name: 'contractEndDate', type: 'string' },
  ],
};

export class BootstrapError extends McpIdentityError {
  readonly code = 'ERR_BOOTSTRAP';
}

export async function readBootstrapFile(path: string): Promise<BootstrapDocument> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BootstrapError(`Cannot read bootstrap file ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new BootstrapError(
      `Bootstrap file ${path} is not valid YAML: ${(error as Error).message}`,
    );
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new BootstrapError(`Bootstrap file ${path} must be a YAML mapping`);
  }
  return checkBootstrap(parsed, `Bootstrap file ${path}`);
}

/** The document when it matches the bootstrap schema; otherwise every problem, by key path. */
export function checkBootstrap(
  document: unknown,
  source = 'Bootstrap document',
): BootstrapDocument {
  if (BOOTSTRAP_DOCUMENT.is(document)) return document;
  throw new BootstrapError(`${source} is invalid:\n  ${bootstrapProblems(document).join('\n  ')}`);
}

const scopesOf = (value: string[] | '*' | undefined): string[] =>
  value === '*' ? [...KNOWN_SCOPES] : (value ?? []);

/** Creates what is missing: custom attributes, apps, users, groups, roles and their links. */
export async function applyBootstrap(
  document: BootstrapDocument,
  stores: { apps: AppStore; service: ScimService; resources: ApiResourceStore },
): Promise<BootstrapResult> {
  const { apps, service, resources } = stores;
  const result: BootstrapResult = { createdApplications: [] };
  const fail = (what: string, error: unknown): never => {
    const reason = error instanceof ScimError ? error.detail : (error as Error).message;
    throw new BootstrapError(`Bootstrap ${what}: ${reason}`);
  };

  for (const attribute of document.customAttributes ?? []) {
    try {
      service.users.defineCustomAttribute(attribute);
    } catch (error) {
      fail(`custom attribute ${attribute.name}`, error);
    }
  }

  for (const app of document.applications ?? []) {
    const settings = {
      name: app.name,
      grantTypes: app.grantTypes ?? ['client_credentials'],
      scopes: scopesOf(app.scopes),
      redirectUris: app.redirectUris ?? [],
      ...(app.tokenExchange ? { tokenExchange: app.tokenExchange } : {}),
    };
    try {
      const existing = app.clientId
        ? apps.get(app.clientId)
        : apps.list().find((a) => a.name === app.name);
      if (existing) {
        apps.update(existing.clientId, settings);
        if (app.clientSecret) await apps.ensureSecret(existing.clientId, app.clientSecret);
        continue;
      }
      const created = await apps.create({
        ...settings,
        ...(app.clientId ? { clientId: app.clientId } : {}),
        ...(app.clientSecret ? { clientSecret: app.clientSecret } : {}),
      });
      result.createdApplications.push({
        name: app.name,
        clientId: created.app.clientId,
        ...(app.clientSecret ? {} : { clientSecret: created.clientSecret }),
      });
    } catch (error) {
      fail(`application ${app.name}`, error);
    }
  }

  for (const resource of document.apiResources ?? []) {
    try {
      resources.put({
        identifier: resource.identifier,
        name: resource.name,
        scopes: resource.scopes,
        dynamicClients: resource.dynamicClients ?? false,
        applications: resource.applications ?? [],
      });
    } catch (error) {
      fail(`API resource ${resource.identifier}`, error);
    }
  }

  for (const user of document.users ?? []) {
    const { userName } = user;
    try {
      if (!service.users.findByUserName(userName)) await service.createUser('user', user);
    } catch (error) {
      fail(`user ${userName}`, error);
    }
  }

  const userId = (name: string, owner: string): string => {
    const found = service.users.findByUserName(name);
    if (!found) throw new BootstrapError(`Bootstrap ${owner}: unknown user ${name}`);
    return found.id;
  };

  for (const group of document.groups ?? []) {
    try {
      const existing =
        service.groups.findByName(group.displayName) ??
        service.groups.create({ displayName: group.displayName });
      const members = (group.members ?? []).map((name) => ({
        value: userId(name, `group ${group.displayName}`),
        display: name,
      }));
      if (members.length) {
        service.groups.patch(existing.id, [{ op: 'add', path: 'members', value: members }]);
      }
    } catch (error) {
      if (error instanceof BootstrapError) throw error;
      fail(`group ${group.displayName}`, error);
    }
  }

  for (const role of document.roles ?? []) {
    try {
      const existing =
        service.roles.findByName(role.displayName) ??
        service.roles.create({ displayName: role.displayName });
      const groupIds = (role.groups ?? []).map((name) => {
        const found = service.groups.findByName(name);
        if (!found)
          throw new BootstrapError(`Bootstrap role ${role.displayName}: unknown group ${name}`);
        return { value: found.id };
      });
      service.roles.patch(existing.id, [
        {
          op: 'add',
          path: 'permissions',
          value: scopesOf(role.permissions).map((value) => ({ value })),
        },
        {
          op: 'add',
          path: 'users',
          value: (role.users ?? []).map((name) => ({
            value: userId(name, `role ${role.displayName}`),
          })),
        },
        { op: 'add', path: 'groups', value: groupIds },
      ]);
    } catch (error) {
      if (error instanceof BootstrapError) throw error;
      fail(`role ${role.displayName}`, error);
    }
  }
  return result;
}
