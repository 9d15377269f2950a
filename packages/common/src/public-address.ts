import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Addresses a server-side fetch of a URL a stranger chose must never reach (SSRF,
 * draft-ietf-oauth-client-id-metadata-document §6.5): the IANA special-purpose ranges of
 * RFC 6890 and its successors (this host, private, shared, loopback, link-local, unique-local,
 * documentation, benchmarking, multicast, reserved) and the IPv6 ranges that tunnel an IPv4
 * address (6to4, Teredo, NAT64), which could carry any of those.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/**
 * Whether `address` (an IP literal, IPv6 without brackets) is a public unicast address. An
 * IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is judged by its IPv4 address
 * (BlockList applies the IPv4 rules to it).
 */
export function isPublicAddress(address: string): boolean {
  if (isIPv4(address)) return !NON_PUBLIC.check(address, 'ipv4');
  if (isIPv6(address)) return !NON_PUBLIC.check(address, 'ipv6');
  return false;
}
