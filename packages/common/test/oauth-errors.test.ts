import { OAuthError, oauthErrorStatus } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('OAuthError', () => {
  it('answers each code with its RFC status unless told otherwise', () => {
    expect(oauthErrorStatus('invalid_request')).toBe(400);
    expect(oauthErrorStatus('invalid_grant')).toBe(400);
    expect(oauthErrorStatus('invalid_target')).toBe(400);
    expect(oauthErrorStatus('invalid_client')).toBe(401);
    expect(oauthErrorStatus('invalid_token')).toBe(401);
    expect(oauthErrorStatus('insufficient_scope')).toBe(403);
    expect(oauthErrorStatus('too_many_requests')).toBe(429);
    expect(oauthErrorStatus('server_error')).toBe(500);
    expect(oauthErrorStatus('temporarily_unavailable')).toBe(503);
    expect(new OAuthError('invalid_request', 'too big', { status: 413 }).status).toBe(413);
  });

  it('carries code, description and the Basic challenge flag', () => {
    const error = new OAuthError('invalid_client', 'Client authentication failed', {
      basicChallenge: true,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      code: 'invalid_client',
      description: 'Client authentication failed',
      status: 401,
      basicChallenge: true,
    });
    expect(new OAuthError('invalid_grant', 'x').basicChallenge).toBe(false);
  });
});
