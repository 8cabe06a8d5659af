import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where a customer's callback may not go (server-side request forgery): loopback, private networks,
 * link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, multicast and reserved ranges,
 * in IPv4 and IPv6 (IPv4-mapped IPv6 addresses are checked as IPv4).
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [['::', 128], ['::1', 128], ['64:ff9b::', 96], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** True for an IP address a callback may reach; false for a non-public one or anything that is not an IP. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host of a URL as an address or name (`[::1]` → `::1`). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Why a callback URL is refused before anything is resolved: a literal non-public address, or a
 * name that always means this machine. Undefined when it may be tried (names are checked again
 * when they are resolved, at each delivery).
 */
export function refusedCallbackHost(url: URL): string | undefined {
  const host = hostOf(url).toLowerCase();
  if (isIP(host)) return isPublicAddress(host) ? undefined : `${host} is not a public address`;
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is this machine`;
  return undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that connects only to public addresses: the name is resolved once and
 * the connection goes to an address that was checked, so a name cannot be re-pointed at a private
 * address between the check and the connection (DNS rebinding).
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const allowed = addresses.filter((entry) => isPublicAddress(entry.address));
    if (allowed.length === 0) {
      const refused = Object.assign(new Error(`${hostname} resolves to no public address (${addresses.map((a) => a.address).join(', ')})`), {
        code: 'ENOTPUBLIC',
      });
      return callback(refused, []);
    }
    if (options.all) return callback(null, allowed);
    return callback(null, allowed[0].address, allowed[0].family);
  });
}
