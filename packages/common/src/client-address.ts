import { isIPv4, isIPv6 } from 'node:net';

/** IPv4 addresses are grouped by /24: the smallest block routed on the Internet (RFC 7454 §6.1.3). */
export const IPV4_NETWORK_PREFIX = 24;
/** IPv6 addresses are grouped by /64: one subnet, which a single host can fill (RFC 7421). */
export const IPV6_NETWORK_PREFIX = 64;

/**
 * The network a client address belongs to, as a key for quotas that per-address limits alone
 * cannot give: whoever holds one IPv6 address holds its whole /64, and a small network its
 * /24, so counting by address lets one party multiply every limit. IPv4 gives `a.b.c.0/24`,
 * IPv6 its first four groups (`2001:db8:0:1::/64`; an IPv4-mapped address counts as its IPv4
 * address); anything else (no address, a Unix socket) is its own key.
 */
export function clientNetwork(address: string): string {
  if (isIPv4(address)) return ipv4Network(address);
  const unzoned = address.split('%')[0]!;
  if (!isIPv6(unzoned)) return address;
  const groups = ipv6Groups(unzoned.toLowerCase());
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6]!, groups[7]!];
    return ipv4Network(`${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`);
  }
  return `${groups
    .slice(0, IPV6_NETWORK_PREFIX / 16)
    .map((group) => group.toString(16))
    .join(':')}::/${IPV6_NETWORK_PREFIX}`;
}

function ipv4Network(address: string): string {
  const octets = address.split('.').slice(0, IPV4_NETWORK_PREFIX / 8);
  return `${octets.join('.')}.0/${IPV4_NETWORK_PREFIX}`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted tail converted). */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const parse = (part: string | undefined): number[] =>
    part
      ? part.split(':').flatMap((piece) => {
          if (!piece.includes('.')) return [Number.parseInt(piece, 16)];
          const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        })
      : [];
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined
    ? front
    : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}
