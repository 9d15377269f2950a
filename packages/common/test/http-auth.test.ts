import { basicCredentials, bearerToken } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

const basic = (raw: string) => `Basic ${Buffer.from(raw, 'utf8').toString('base64')}`;

describe('bearerToken (RFC 6750 b64token)', () => {
  it('returns the token of a Bearer header, scheme case-insensitive', () => {
    expect(bearerToken('Bearer abc.DEF-_~+/==')).toBe('abc.DEF-_~+/==');
    expect(bearerToken('bearer  tok  ')).toBe('tok');
  });

  it('refuses other schemes, missing tokens and characters outside b64token', () => {
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Bearer a,b')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken('Bearer a=b')).toBeUndefined();
    expect(bearerToken('Bearer\tabc')).toBeUndefined();
  });
});

describe('basicCredentials (RFC 7617)', () => {
  it('splits user and password at the first colon, keeping the rest verbatim', () => {
    expect(basicCredentials(basic('alice:pa:ss%20+'))).toEqual({
      user: 'alice',
      password: 'pa:ss%20+',
    });
    expect(basicCredentials(`bAsIc ${Buffer.from('u:').toString('base64')}`)).toEqual({
      user: 'u',
      password: '',
    });
  });

  it('refuses a header without colon, with bad base64 or another scheme', () => {
    expect(basicCredentials(basic('nocolon'))).toBeUndefined();
    expect(basicCredentials('Basic ***')).toBeUndefined();
    expect(basicCredentials('Bearer abc')).toBeUndefined();
    expect(basicCredentials(undefined)).toBeUndefined();
  });
});
