import { describe, expect, it } from 'vitest';
import { authScheme, basicClientCredentials } from '../src/oauth/routes/client-auth.js';

const basic = (raw: string) => `Basic ${Buffer.from(raw, 'utf8').toString('base64')}`;

describe('basicClientCredentials (RFC 6749 §2.3.1)', () => {
  it('form-urlencoded decodes client id and secret', () => {
    expect(basicClientCredentials(basic('my+client:s%3Ac%2Bret'))).toEqual({
      clientId: 'my client',
      clientSecret: 's:c+ret',
    });
  });

  it('refuses credentials that do not decode', () => {
    expect(basicClientCredentials(basic('client:%E0%A4%A'))).toBeUndefined();
    expect(basicClientCredentials(basic('client'))).toBeUndefined();
  });
});

describe('authScheme', () => {
  it('names the scheme lower-cased', () => {
    expect(authScheme('Basic abc')).toBe('basic');
    expect(authScheme('DPoP x')).toBe('dpop');
    expect(authScheme('Negotiate')).toBe('negotiate');
    expect(authScheme(undefined)).toBeUndefined();
    expect(authScheme('')).toBeUndefined();
  });
});
