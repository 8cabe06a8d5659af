import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signature of a completion callback: hex HMAC-SHA256, keyed with the account's webhook_secret,
 * over `<timestamp>.<raw body>`, where the timestamp (unix seconds) is also sent in the
 * X-Signature-Timestamp header. Signing the timestamp lets a receiver refuse replays of old calls.
 */
export function signCallback(secret: string, timestamp: string, rawBody: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex');
}

/**
 * X-Signature: one signature per valid secret, comma-separated, the current secret's first. Outside a
 * rotation's grace period that is one signature, as before rotations existed.
 */
export function signatureHeader(secrets: string[], timestamp: string, rawBody: string): string {
  return secrets.map((secret) => signCallback(secret, timestamp, rawBody)).join(',');
}

/** What a receiver does (also the README's example): constant-time compare, and a bounded clock skew. */
export function verifyCallback(
  secret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  rawBody: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): boolean {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(signCallback(secret, timestamp, rawBody), 'hex');
  // Any of the signatures may be ours: during a rotation the receiver holds either secret.
  return signature.split(',').some((candidate) => {
    const given = Buffer.from(candidate.trim(), 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
