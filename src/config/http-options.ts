import { isIP } from 'node:net';

/** What Express's `trust proxy` setting accepts: hop count, on/off, or named ranges / addresses / CIDRs. */
export type TrustProxy = boolean | number | string[];

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY: `false` (default: req.ip is the socket's peer), `true` (trust every hop: only behind a
 * proxy that overwrites X-Forwarded-For), a hop count (`1` = one load balancer), or a comma-separated
 * list of `loopback` / `linklocal` / `uniquelocal` / IP addresses / CIDRs. Undefined when malformed.
 */
export function parseTrustProxy(raw: string): TrustProxy | undefined {
  const value = raw.trim().toLowerCase();
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\d{1,3}$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  return entries.every(isTrustedRange) ? entries : undefined;
}

function isTrustedRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0 || isIP(address) === 0) return false;
  if (bits === undefined) return true;
  const max = isIP(address) === 4 ? 32 : 128;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max;
}

/** CORS: off (undefined), every origin ('*'), or an allow-list of exact origins. */
export type CorsOrigins = '*' | string[];

/** CORS_ORIGINS: `*` or comma-separated origins such as `https://app.example.com`. Undefined when malformed. */
export function parseCorsOrigins(raw: string): CorsOrigins | undefined {
  const value = raw.trim();
  if (value === '*') return '*';
  const origins = value.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '');
  if (origins.length === 0) return undefined;
  return origins.every(isOrigin) ? origins : undefined;
}

function isOrigin(candidate: string): boolean {
  try {
    const url = new URL(candidate);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === candidate;
  } catch {
    return false;
  }
}
