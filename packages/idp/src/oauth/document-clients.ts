import {
  ClientIdMetadataError,
  type ClientIdMetadataResolver,
  isClientIdMetadataUrl,
  OAuthError,
} from '@mcp-identity/common';
import type { Application, AppStore, GrantType } from '../store/apps.js';
import { intersect, splitScope } from './routes/scopes.js';

/** An application of the IdP; a Client ID Metadata Document client also names its host. */
export type OAuthClient = Application & {
  /** The host the client's metadata document came from (draft-ietf-oauth-client-id-metadata-document). */
  documentHost?: string;
};

/**
 * The clients of the authorization endpoints: registered applications (static or RFC 7591),
 * and clients whose `client_id` is the HTTPS URL of their metadata document, fetched and
 * validated by common's resolver. A document client is treated as a dynamically registered
 * public one: the same resources (`dynamicClients`), the scopes its document asks for among
 * the known ones (all when it names none, as at registration).
 */
export class OAuthClients {
  constructor(
    private readonly apps: AppStore,
    private readonly documents: ClientIdMetadataResolver | undefined,
    private readonly knownScopes: readonly string[],
  ) {}

  /** A confidential client's id and secret (`AppStore.authenticate`); documents have none. */
  authenticate(clientId: string, secret: string): Promise<Application | undefined> {
    return this.apps.authenticate(clientId, secret);
  }

  /** Whether metadata document clients are accepted (RFC 8414 `client_id_metadata_document_supported`). */
  get acceptsDocuments(): boolean {
    return this.documents !== undefined;
  }

  /**
   * The client named `clientId`; undefined when there is none. A document that cannot be
   * used is `invalid_client`, its description saying why.
   */
  async find(clientId: string): Promise<OAuthClient | undefined> {
    const registered = this.apps.get(clientId);
    if (registered !== undefined || this.documents === undefined) return registered;
    if (!isClientIdMetadataUrl(clientId)) return undefined;
    try {
      const metadata = await this.documents.resolve(clientId);
      const grants = (metadata.document.grant_types as GrantType[] | undefined) ?? [
        'authorization_code',
        'refresh_token',
      ];
      const requested =
        metadata.scope === undefined ? this.knownScopes : splitScope(metadata.scope);
      return {
        clientId,
        name: metadata.clientName,
        grantTypes: grants,
        scopes: intersect(requested, this.knownScopes),
        redirectUris: metadata.redirectUris,
        dynamic: true,
        used: true,
        confidential: false,
        createdAt: 0,
        documentHost: metadata.host,
      };
    } catch (error) {
      if (error instanceof ClientIdMetadataError) {
        throw new OAuthError('invalid_client', error.message);
      }
      throw error;
    }
  }
}
