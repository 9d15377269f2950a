import {
  ConfigError,
  InternalError,
  McpIdentityError,
  NotFoundError,
  OAuthError,
  SchemaError,
  StateUnavailableError,
  UnavailableError,
} from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('the common error base', () => {
  it('names each error after its class and gives it a stable code', () => {
    const error = new InternalError('a broken invariant');
    expect(error).toBeInstanceOf(McpIdentityError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('InternalError');
    expect(error.code).toBe('ERR_INTERNAL');
    expect(String(error)).toBe('InternalError: a broken invariant');
  });

  it('keeps the cause it is given', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new UnavailableError('cannot reach Redis', { cause });
    expect(error.cause).toBe(cause);
  });

  it('lets a subclass refine its parent’s code and keep the parent’s class', () => {
    const error = new StateUnavailableError(new Error('down'));
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.code).toBe('ERR_STATE_UNAVAILABLE');
    expect(error.name).toBe('StateUnavailableError');
    expect(error.statusCode).toBe(503);
    expect(new NotFoundError('no such stack').code).toBe('ERR_NOT_FOUND');
  });

  it('keeps each class’s own fields: exit code, issues, the OAuth code and status', () => {
    const config = new ConfigError([
      { key: 'port', source: 'flag --port', message: 'not a number' },
    ]);
    expect([config.code, config.exitCode, config.name]).toEqual(['ERR_CONFIG', 2, 'ConfigError']);
    const schema = new SchemaError('the document', []);
    expect([schema.code, schema.issues]).toEqual(['ERR_SCHEMA', []]);
    const oauth = new OAuthError('invalid_client', 'Client authentication failed');
    expect(oauth).toBeInstanceOf(McpIdentityError);
    expect([oauth.code, oauth.status, oauth.name]).toEqual(['invalid_client', 401, 'OAuthError']);
  });
});
