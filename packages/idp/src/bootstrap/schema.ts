import { compileSchema, keyPath, type SchemaIssue, stringEnum } from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';
import { GRANT_TYPES } from '../store/apps.js';

const NAME = Type.String({ minLength: 1 });
const NAMES = Type.Array(NAME);
/** Scope names, or `"*"` for every scope the IdP knows. */
const SCOPES = Type.Union([Type.Literal('*'), NAMES]);
const closed = { additionalProperties: false } as const;

/** JSON Schema of the bootstrap file: every key is known, every value of the right type. */
const BOOTSTRAP_SCHEMA = Type.Partial(
  Type.Object(
    {
      customAttributes: Type.Array(
        Type.Object(
          { name: NAME, type: stringEnum(['string', 'boolean', 'integer', 'dateTime']) },
          closed,
        ),
      ),
      applications: Type.Array(
        Type.Object(
          {
            name: NAME,
            clientId: Type.Optional(NAME),
            /** Omitted: generated at creation and reported once in the result. */
            clientSecret: Type.Optional(NAME),
            grantTypes: Type.Optional(Type.Array(stringEnum([...GRANT_TYPES]))),
            scopes: Type.Optional(SCOPES),
            redirectUris: Type.Optional(NAMES),
            /**
             * RFC 8693 (with the token-exchange grant): `subjectAudiences` are the `aud` values
             * of the tokens it may exchange, `resources` the audiences it may exchange them for.
             */
            tokenExchange: Type.Optional(
              Type.Object({ subjectAudiences: NAMES, resources: NAMES }, closed),
            ),
          },
          closed,
        ),
      ),
      /** SCIM user bodies (userName, password, emails, extensions…): the SCIM layer checks them. */
      users: Type.Array(
        Type.Intersect([
          Type.Object({ userName: NAME }),
          Type.Record(Type.String(), Type.Unknown()),
        ]),
      ),
      /** `members` are user names. */
      groups: Type.Array(Type.Object({ displayName: NAME, members: Type.Optional(NAMES) }, closed)),
      /** `users` are user names, `groups` group names, `permissions` scopes or `"*"`. */
      roles: Type.Array(
        Type.Object(
          {
            displayName: NAME,
            permissions: Type.Optional(SCOPES),
            users: Type.Optional(NAMES),
            groups: Type.Optional(NAMES),
          },
          closed,
        ),
      ),
      /** API resources (RFC 8707) tokens can be bound to; `applications` are application names. */
      apiResources: Type.Array(
        Type.Object(
          {
            identifier: NAME,
            name: NAME,
            scopes: NAMES,
            dynamicClients: Type.Optional(Type.Boolean()),
            applications: Type.Optional(NAMES),
          },
          closed,
        ),
      ),
    },
    closed,
  ),
);

/** The bootstrap file (YAML). Every section is optional; applying it twice changes nothing. */
export type BootstrapDocument = Static<typeof BOOTSTRAP_SCHEMA>;

export const BOOTSTRAP_DOCUMENT = compileSchema(BOOTSTRAP_SCHEMA);

/** Problems of a bootstrap document, each `key.path: message`; empty when it is valid. */
export function bootstrapProblems(document: unknown): string[] {
  const problems = BOOTSTRAP_DOCUMENT.issues(document)
    // `anyOf` reports each failed branch and then itself: keep the summary only.
    .filter((issue) => !issue.inAlternative)
    .map(describe);
  return [...new Set(problems)];
}

function describe(issue: SchemaIssue): string {
  const key = keyPath(issue.path);
  switch (issue.keyword) {
    case 'anyOf':
      return `${key}: must be "*" or a list of names`;
    case 'enum':
      return `${key}: must be one of ${issue.params.allowedValues.join(', ')}`;
    default:
      return `${key || '(top level)'}: ${issue.message}`;
  }
}
