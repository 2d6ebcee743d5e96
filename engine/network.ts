import { isIPv4, isIPv6 } from 'node:net';

/**
 * Why an outside system could not reach this URL's host, if it plainly could not: a loopback,
 * private, link-local or unspecified address, or a name that only resolves locally. Names are not
 * resolved (a public name behind a tunnel is fine).
 */
export function unreachableFromOutside(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return 'a loopback name';
  if (host.endsWith('.local') || host.endsWith('.internal') || (!host.includes('.') && !isIPv6(host)))
    return 'a name that only resolves on a local network';
  if (isIPv4(host)) {
    const [a, b] = host.split('.').map(Number);
    if (a === 127) return 'a loopback address';
    if (a === 0) return 'an unspecified address';
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127))
      return 'a private address';
    if (a === 169 && b === 254) return 'a link-local address';
    return undefined;
  }
  if (isIPv6(host)) {
    if (host === '::1') return 'a loopback address';
    if (host === '::') return 'an unspecified address';
    if (/^f[cd]/.test(host)) return 'a private address';
    if (/^fe[89ab]/.test(host)) return 'a link-local address';
    // An IPv4-mapped address, as URL writes it (::ffff:7f00:1 is 127.0.0.1).
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
    if (mapped) {
      const [high, low] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
      return unreachableFromOutside(new URL(`http://${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`));
    }
  }
  return undefined;
}
