import { clientNetwork } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('clientNetwork', () => {
  it('groups IPv4 addresses by /24 and IPv6 addresses by /64', () => {
    expect(clientNetwork('203.0.113.7')).toBe('203.0.113.0/24');
    expect(clientNetwork('203.0.113.250')).toBe('203.0.113.0/24');
    expect(clientNetwork('203.0.114.7')).toBe('203.0.114.0/24');
    expect(clientNetwork('127.5.6.7')).toBe('127.5.6.0/24');
    expect(clientNetwork('2001:db8:0:1:2:3:4:5')).toBe('2001:db8:0:1::/64');
    expect(clientNetwork('2001:0DB8:0000:0001:ffff::1')).toBe('2001:db8:0:1::/64');
    expect(clientNetwork('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientNetwork('2001:db8:0:2::1')).not.toBe(clientNetwork('2001:db8:0:1::1'));
    expect(clientNetwork('::1')).toBe('0:0:0:0::/64');
    expect(clientNetwork('::')).toBe('0:0:0:0::/64');
    expect(clientNetwork('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientNetwork('1:2:3:4:5:6:1.2.3.4')).toBe('1:2:3:4::/64');
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(clientNetwork('::ffff:203.0.113.7')).toBe('203.0.113.0/24');
    expect(clientNetwork('::FFFF:cb00:7107')).toBe('203.0.113.0/24');
  });

  it('keeps anything that is not an address as its own key', () => {
    for (const value of ['', 'localhost', '1.2.3', '1.2.3.4.5', '::g', '[::1]']) {
      expect(clientNetwork(value)).toBe(value);
    }
  });
});
