import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from './errors';

/** IPv6 global unicast (RFC 4291 2.4): the only IPv6 block a callback may reach, besides the IPv4 it embeds. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * NAT64's local-use prefix (RFC 8215) can embed the IPv4 at several positions (/48, /56, /64 layouts,
 * RFC 6052 2.2), so no single decoding is right; it only exists inside an operator's network: refused
 * whole. ipaddr.js names it `rfc6052` together with the well-known 64:ff9b::/96, whose /96 form is
 * the only one decoded.
 */
const NAT64_LOCAL_USE = ipaddr.parseCIDR('64:ff9b:1::/48');

/**
 * IPv6 forms that carry an IPv4 address: the connection ends up at that IPv4 (a NAT64 gateway, a
 * 6to4 relay, a Teredo peer, or the kernel itself for IPv4-mapped), so that IPv4 is what is judged.
 * Each returns the embedded address from the 8 sixteen-bit parts.
 */
const EMBEDDED_IPV4: Record<string, (parts: number[]) => ipaddr.IPv4> = {
  ipv4Mapped: (p) => v4(p[6], p[7]), // ::ffff:a.b.c.d
  rfc6145: (p) => v4(p[6], p[7]), // ::ffff:0:a.b.c.d (IPv4-translated)
  rfc6052: (p) => v4(p[6], p[7]), // 64:ff9b::/96 (NAT64, well-known prefix; 64:ff9b:1::/48 is refused before)
  '6to4': (p) => v4(p[1], p[2]), // 2002:aabb:ccdd::/48
  teredo: (p) => v4(p[6] ^ 0xffff, p[7] ^ 0xffff), // 2001:0::/32, the client's address, obfuscated
};

function v4(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * Why `address` is not a global unicast address a callback may reach, or undefined when it is.
 * Judged by ipaddr.js's range names: IPv4 must be `unicast` (not private, loopback, link-local,
 * carrier-grade NAT, reserved, multicast...); IPv6 must be in 2000::/3 and `unicast`, except the forms
 * that embed an IPv4 (IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, 6to4, Teredo), where the embedded IPv4 is
 * judged instead. Zone ids (`fe80::1%eth0`) are refused: they only exist on local links.
 */
export function nonPublicReason(address: string): string | undefined {
  if (isIP(address) === 0) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') {
    const range = parsed.range();
    return range === 'unicast' ? undefined : `${address} is not a public address (${range})`;
  }
  const v6 = parsed as ipaddr.IPv6;
  if (v6.zoneId !== undefined) return `${address} has a zone id (a local link)`;
  if (v6.match(NAT64_LOCAL_USE)) return `${address} is not a public address (NAT64 local-use prefix 64:ff9b:1::/48)`;
  const range = v6.range();
  const embedded = EMBEDDED_IPV4[range];
  if (embedded) {
    const inner = embedded(v6.parts);
    const innerRange = inner.range();
    return innerRange === 'unicast' ? undefined : `${address} is not a public address (${range} of ${inner.toString()}, ${innerRange})`;
  }
  if (range !== 'unicast' || !v6.match(GLOBAL_UNICAST_V6)) return `${address} is not a public address (${range === 'unicast' ? 'not global unicast' : range})`;
  return undefined;
}

/** True for an IP address a callback may reach; false for a non-public one or anything that is not an IP. */
export function isPublicAddress(address: string): boolean {
  return nonPublicReason(address) === undefined;
}

/** The host of a URL as an address or name (`[::1]` → `::1`). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Which callback URLs this service may call: CALLBACK_ALLOW_PRIVATE_NETWORKS and CALLBACK_ALLOWED_PORTS (AppConfig's `callbacks`). */
export interface CallbackAddressPolicy {
  /** Development: any address and any port; only the URL's form is checked. */
  allowPrivateNetworks: boolean;
  /** The ports a URL may name (a URL without one uses its scheme's 80 or 443); 'any': every port. */
  allowedPorts: readonly number[] | 'any';
}

/** Production's rule: public addresses, on the web's two ports. */
export const PUBLIC_WEB_ONLY: CallbackAddressPolicy = { allowPrivateNetworks: false, allowedPorts: [80, 443] };

/**
 * Why a callback URL is refused before anything is resolved: a URL this service cannot call (IPv6
 * zone ids such as `[fe80::1%25eth0]` are not valid WHATWG URLs), a literal non-public address, a name that always means this machine, or a port the policy does not
 * allow (a public address's SSH or Redis is no receiver of ours). Undefined when it may be tried
 * (names are checked again on the addresses they resolve to, at each delivery). With
 * `allowPrivateNetworks`, only the URL's form is checked.
 */
export function refusedCallbackUrl(raw: string, policy: CallbackAddressPolicy = PUBLIC_WEB_ONLY): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return /%25|%[^/]*\]/.test(raw) ? 'an IPv6 zone id (%25...) is not accepted' : 'it is not a URL this service can call';
  }
  if (policy.allowPrivateNetworks) return undefined;
  const host = hostOf(url).toLowerCase().replace(/\.$/, '');
  const reason = isIP(host) ? nonPublicReason(host) : host === 'localhost' || host.endsWith('.localhost') ? `${host} is this machine` : undefined;
  if (reason) return `${reason} ${ALLOW_PRIVATE_HINT}`;
  return refusedPort(url, policy.allowedPorts);
}

/** Why the URL's port is refused (the scheme's default port when it names none), or undefined. */
function refusedPort(url: URL, allowed: CallbackAddressPolicy['allowedPorts']): string | undefined {
  if (allowed === 'any') return undefined;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (allowed.includes(port)) return undefined;
  return `port ${port} is not accepted (allowed: ${allowed.join(', ')}; CALLBACK_ALLOWED_PORTS lists the ports a callback may use)`;
}

/** What a developer trying callbacks on their own machine needs to read. */
export const ALLOW_PRIVATE_HINT = '(to receive callbacks on this machine or a private network, for development, start the service with CALLBACK_ALLOW_PRIVATE_NETWORKS=true)';

/**
 * The submission-time rule of every callback URL (bulk and watchlist callback_url, settings'
 * webhook_url): 400 INVALID_REQUEST naming `field` when refusedCallbackUrl refuses it. The same rule
 * runs again at each delivery, on the addresses the name resolves to (webhooks/callback.client.ts).
 */
export function requireCallbackUrl(field: string, raw: string | null | undefined, policy: CallbackAddressPolicy): void {
  if (raw === undefined || raw === null) return;
  const refused = refusedCallbackUrl(raw, policy);
  if (refused) throw new AppError('INVALID_REQUEST', `${field} must point to a public address on an allowed port: ${refused}.`);
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
