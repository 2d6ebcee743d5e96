import { BlockList, isIP } from 'node:net';

/** Address ranges no outside system can reach and a tenant's request must not be aimed at, by what they are. */
const NON_PUBLIC_RANGES: Array<[kind: string, family: 'ipv4' | 'ipv6', network: string, prefix: number]> = [
  ['a loopback address', 'ipv4', '127.0.0.0', 8],
  ['a loopback address', 'ipv6', '::1', 128],
  ['an unspecified address', 'ipv4', '0.0.0.0', 8],
  ['an unspecified address', 'ipv6', '::', 128],
  ['a private address', 'ipv4', '10.0.0.0', 8],
  ['a private address', 'ipv4', '172.16.0.0', 12],
  ['a private address', 'ipv4', '192.168.0.0', 16],
  ['a private address', 'ipv4', '100.64.0.0', 10], // carrier-grade NAT
  ['a private address', 'ipv4', '198.18.0.0', 15], // benchmarking networks
  ['a private address', 'ipv6', 'fc00::', 7],
  ['a link-local address', 'ipv4', '169.254.0.0', 16], // also cloud metadata services (169.254.169.254)
  ['a link-local address', 'ipv6', 'fe80::', 10],
  ['a multicast or reserved address', 'ipv4', '224.0.0.0', 3],
  ['a multicast or reserved address', 'ipv6', 'ff00::', 8],
  ['an IPv4 address translated to IPv6', 'ipv6', '64:ff9b::', 96],
  // Tunnels that carry an IPv4 address inside (which may be a private one): 6to4 and Teredo.
  ['an IPv4 address tunnelled in IPv6 (6to4)', 'ipv6', '2002::', 16],
  ['an IPv4 address tunnelled in IPv6 (Teredo)', 'ipv6', '2001::', 32],
];

const ranges = NON_PUBLIC_RANGES.map(([kind, family, network, prefix]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { kind, list };
});

/**
 * What an IP address is when it is not a public one (loopback, private, link-local, ...), or
 * undefined. IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) count as their IPv4 address.
 */
export function nonPublicAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return ranges.find(({ list }) => list.check(address, type))?.kind;
}

/**
 * Address ranges written as `10.8.0.0/16, fd12::/16`; throws naming the first that is not one.
 */
export function addressRanges(text: string): BlockList {
  const list = new BlockList();
  for (const range of text.split(',').map((part) => part.trim())) {
    const [network, prefix, extra] = range.split('/');
    const family = isIP(network);
    const bits = /^\d{1,3}$/.test(prefix ?? '') ? Number(prefix) : Number.NaN;
    if (!family || extra !== undefined || !(bits <= (family === 4 ? 32 : 128)))
      throw new Error(`"${range}" is not an address range such as 10.8.0.0/16`);
    list.addSubnet(network, bits, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Refuses every non-public address but those in `allowed` (say, the network of an on-premises ERP). */
export function nonPublicRefusal(allowed?: BlockList): (address: string) => string | undefined {
  return (address) => {
    const kind = nonPublicAddress(address);
    return kind && allowed?.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6') ? undefined : kind;
  };
}

/**
 * Why an outside system could not reach this URL's host, if it plainly could not: a loopback,
 * private, link-local or unspecified address, or a name that only resolves locally. Names are not
 * resolved (a public name behind a tunnel is fine).
 */
export function unreachableFromOutside(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host)) return nonPublicAddress(host);
  if (host === 'localhost' || host.endsWith('.localhost')) return 'a loopback name';
  if (host.endsWith('.local') || host.endsWith('.internal') || !host.includes('.'))
    return 'a name that only resolves on a local network';
  return undefined;
}
