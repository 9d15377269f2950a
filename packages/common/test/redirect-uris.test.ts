import { isRedirectUriAllowed, redirectUriProblem } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('redirectUriProblem (registration allow-list)', () => {
  it.each([
    'https://app.example.com/callback',
    'https://app.example.com:8443/cb?x=1',
    'http://localhost/cb',
    'http://127.0.0.1:33418/cb',
    'http://[::1]:8080/cb',
    'com.example.app:/oauth2redirect',
    'com.example.app:/oauth2redirect/provider',
    'io.modelcontextprotocol.inspector:/cb',
    'cursor://anysphere.cursor-retrieval/oauth/callback',
    'myapp://app.example.com/cb?x=1',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeUndefined();
  });

  it.each([
    ['view-source:https://evil.example/', /scheme/],
    ['jar:https://evil.example/x.jar!/', /scheme/],
    ['x-javascript:alert(1)', /scheme/],
    ['javascript:alert(1)', /scheme/],
    ['data:text/html,<script>alert(1)</script>', /scheme/],
    ['file:///etc/passwd', /scheme/],
    ['myapp:/cb', /scheme/],
    ['myapp://localhost/cb', /scheme/],
    ['myapp://app.example.com:8080/cb', /scheme/],
    ['javascript://app.example.com/%0Aalert(1)', /scheme/],
    ['JavaScript://app.example.com/%0Aalert(1)', /scheme/],
    ['x-javascript://app.example.com/%0Aalert(1)', /scheme/],
    ['vbscript://app.example.com/cb', /scheme/],
    ['data://app.example.com/cb', /scheme/],
    ['file://app.example.com/etc/passwd', /scheme/],
    ['blob://app.example.com/cb', /scheme/],
    ['about://app.example.com/cb', /scheme/],
    ['wss://app.example.com/cb', /scheme/],
    ['.example.app:/cb', /absolute|scheme/],
    ['ws://localhost/cb', /scheme/],
    ['http://app.example.com/cb', /https/],
    ['http://localhost.evil.example/cb', /https/],
    ['https://user:pw@app.example.com/cb', /user information/],
    ['https://user@app.example.com/cb', /user information/],
    ['https://@app.example.com/cb', /user information/],
    ['com.example.app://user@host/cb', /user information/],
    ['https://app.example.com/cb#frag', /fragment/],
    ['https://app.example.com/cb#', /fragment/],
    ['/relative/cb', /absolute/],
    [`https://app.example.com/${'a'.repeat(2000)}`, /longer/],
    ['http://127.0.0.1/cb\u0000', /control characters/],
    ['https://app.example.com/c\u0001b', /control characters/],
    ['https://app.example.com/a b', /white space/],
  ])('refuses %s', (uri, problem) => {
    expect(redirectUriProblem(uri)).toMatch(problem);
  });
});

describe('isRedirectUriAllowed (authorize)', () => {
  it('matches registered URIs exactly', () => {
    const registered = ['https://app.example.com/cb', 'com.example.app:/cb'];
    expect(isRedirectUriAllowed(registered, 'https://app.example.com/cb')).toBe(true);
    expect(isRedirectUriAllowed(registered, 'com.example.app:/cb')).toBe(true);
    expect(isRedirectUriAllowed(registered, 'https://app.example.com/cb/')).toBe(false);
    expect(isRedirectUriAllowed(registered, 'https://app.example.com/cb?x=1')).toBe(false);
    expect(isRedirectUriAllowed(registered, 'https://APP.example.com/cb')).toBe(false);
  });

  it('lets a loopback URI differ in its port only (RFC 8252 §7.3)', () => {
    const registered = ['http://127.0.0.1/cb'];
    expect(isRedirectUriAllowed(registered, 'http://127.0.0.1:51234/cb')).toBe(true);
    expect(isRedirectUriAllowed(registered, 'http://127.0.0.1:51234/other')).toBe(false);
    expect(isRedirectUriAllowed(registered, 'http://localhost:51234/cb')).toBe(false);
    expect(isRedirectUriAllowed(registered, 'http://user@127.0.0.1:51234/cb')).toBe(false);
  });

  it('never allows a fragment or a refused scheme, even if registered', () => {
    expect(isRedirectUriAllowed(['https://a.example/cb'], 'https://a.example/cb#x')).toBe(false);
    expect(
      isRedirectUriAllowed(['view-source:https://a.example/'], 'view-source:https://a.example/'),
    ).toBe(false);
  });

  it('gives a client without registered URIs loopback http only', () => {
    expect(isRedirectUriAllowed([], 'http://localhost:4000/cb')).toBe(true);
    expect(isRedirectUriAllowed([], 'https://app.example.com/cb')).toBe(false);
  });
});
