import { AppError } from './errors';

/** Longest max-age honoured (RFC 9111 §1.2.2: larger delta-seconds are taken as 2^31). */
export const MAX_AGE_CEILING = 2 ** 31;

/**
 * The freshness a request's `Cache-Control` header asks for (RFC 9111 §5.2.1): `no-cache` or
 * `max-age=0` → 0 (look up live); `max-age=N` → N; nothing about freshness → undefined (any cached
 * answer within its TTL). Directive names are case-insensitive, several headers arrive joined by
 * commas, directives that do not concern freshness (`no-store`, `no-transform`...) are ignored, and
 * when several ask for freshness the strictest wins. A malformed `max-age` is a 400, so that a client
 * asking for fresh answers never silently gets cached ones.
 */
export function requestedMaxAge(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  let strictest: number | undefined;
  for (const directive of text.split(',')) {
    const [rawName, ...rest] = directive.split('=');
    const name = rawName.trim().toLowerCase();
    let maxAge: number | undefined;
    if (name === 'no-cache') maxAge = 0;
    else if (name === 'max-age') maxAge = deltaSeconds(rest.join('=').trim());
    if (maxAge !== undefined) strictest = strictest === undefined ? maxAge : Math.min(strictest, maxAge);
  }
  return strictest;
}

function deltaSeconds(raw: string): number {
  const value = raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw;
  if (!/^\d{1,20}$/.test(value)) {
    throw new AppError('INVALID_REQUEST', `Cache-Control max-age must be a whole number of seconds, e.g. "max-age=3600" (got "${raw.slice(0, 32)}").`);
  }
  return Math.min(Number(value), MAX_AGE_CEILING);
}
