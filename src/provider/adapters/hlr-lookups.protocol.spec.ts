import { LINE_TYPES } from '../port/lookup.types';
import {
  brandName,
  digestHeaders,
  digestSignature,
  isKnownNumberType,
  lineTypeFromUpstream,
  UPSTREAM_NUMBER_TYPES,
  upstreamNumberType,
} from './hlr-lookups.protocol';
import { rateLimitWaitMs } from '../resilience/retry-after';

describe('HLR Lookups request signing', () => {
  // Vectors computed outside this code base:
  //   printf '%s' '/hlr-lookup1700000000POST{"msisdn":"+447400123456"}' | openssl dgst -sha256 -hmac sim-secret -hex
  it('signs path + timestamp + METHOD + body with HMAC-SHA256 (POST)', () => {
    expect(digestSignature('sim-secret', '/hlr-lookup', 1700000000, 'POST', '{"msisdn":"+447400123456"}')).toBe(
      'f17493511b3637744b2bb64595231cbfc6c23a26680e5817766f14ea7b0c16a9',
    );
  });

  it('signs an empty body for GET and upper-cases the method', () => {
    expect(digestSignature('sim-secret', '/auth-test', 1700000000, 'get', '')).toBe(
      '9cecf9ff9ee91fa49514abfafacb188ebb078b00df8ecce6c63a32f3b39ff96f',
    );
  });

  it('builds the three X-Digest headers with the timestamp in unix seconds', () => {
    const headers = digestHeaders({ key: 'sim-key', secret: 'sim-secret' }, '/auth-test', 'GET', '', 1700000000_999);
    expect(headers).toEqual({
      'X-Digest-Key': 'sim-key',
      'X-Digest-Timestamp': '1700000000',
      'X-Digest-Signature': '9cecf9ff9ee91fa49514abfafacb188ebb078b00df8ecce6c63a32f3b39ff96f',
    });
  });
});

describe('number_type → LineType', () => {
  it.each([
    ['LANDLINE', 'FIXED_LINE'],
    ['MOBILE', 'MOBILE'],
    ['MOBILE_OR_LANDLINE', 'FIXED_LINE_OR_MOBILE'],
    ['TOLLFREE', 'TOLL_FREE'],
    ['PREMIUM', 'PREMIUM_RATE'],
    ['SHARED_COST', 'SHARED_COST'],
    ['VOIP', 'VOIP'],
    ['PERSONAL', 'PERSONAL_NUMBER'],
    ['PAGING', 'PAGER'],
    ['UAN', 'UAN'],
    ['VOICEMAIL', 'VOICEMAIL'],
    ['SATELLITE', 'MOBILE'],
    ['UNKNOWN', 'UNKNOWN'],
    ['landline', 'FIXED_LINE'],
    ['FIXED_LINE', 'FIXED_LINE'],
    ['PREMIUM_RATE', 'PREMIUM_RATE'],
    ['HOLOGRAM', 'UNKNOWN'],
    [null, 'UNKNOWN'],
    [42, 'UNKNOWN'],
  ])('%p → %s', (upstream, lineType) => {
    expect(lineTypeFromUpstream(upstream)).toBe(lineType);
  });

  it.each(LINE_TYPES)('round-trips %s through the upstream vocabulary', (lineType) => {
    expect(lineTypeFromUpstream(upstreamNumberType(lineType))).toBe(lineType);
  });

  it.each([
    ['LANDLINE', true],
    [' landline ', true],
    ['FIXED_LINE', true],
    ['UNKNOWN', true],
    ['HOLOGRAM', false],
    ['', false],
    [null, false],
  ])('knows the word %p: %p', (word, known) => {
    expect(isKnownNumberType(word)).toBe(known);
  });

  it('maps every upstream word to a contract LineType', () => {
    for (const lineType of Object.values(UPSTREAM_NUMBER_TYPES)) expect(LINE_TYPES).toContain(lineType);
  });
});

describe('upstream operator name → the brand a customer expects', () => {
  it.each([
    // The documented MNP example (docs/upstream-hlr-lookups.md).
    ['T-Mobile US:6529 - SVR/2', 'T-Mobile US'],
    ['Verizon Wireless:6006 - SVR/2', 'Verizon Wireless'],
    // The documented HLR example: already clean.
    ['T-Mobile US', 'T-Mobile US'],
    ['Verizon Wireless', 'Verizon Wireless'],
    // The same suffix on other operators, spacing variants, a suffix without its route part.
    ['AT&T Wireless:6214 - SVR/2', 'AT&T Wireless'],
    ['Vodafone UK : 1234 - SVR/3', 'Vodafone UK'],
    ['Three:2342', 'Three'],
    ['Telefónica Móviles España:5331 - SVR/2', 'Telefónica Móviles España'],
    // Names that merely contain a colon or digits keep them.
    ['O2 (UK)', 'O2 (UK)'],
    ['1&1 Drillisch', '1&1 Drillisch'],
    ['Operator: Mobile', 'Operator: Mobile'],
    // Control characters, blanks, nothing left.
    ['  EE\u0000 Limited\n', 'EE Limited'],
    [':6529 - SVR/2', null],
    ['   ', null],
    // Trailing blanks after the suffix do not keep it.
    ['T-Mobile US:6529 ', 'T-Mobile US'],
    ['T-Mobile US:6529 - SVR/2 \t', 'T-Mobile US'],
    // Invisible-only names (format characters: zero-width, bidi controls, BOM) are no name.
    ['\u200b', null],
    ['\u202e', null],
    ['\u200b\u202e\ufeff :1234', null],
    ['Voda\u200bfone\u202e', 'Vodafone'],
    // A lone surrogate from upstream (jsonb refuses it) becomes U+FFFD; a pair is kept.
    ['Orange\ud800', 'Orange\ufffd'],
    ['Orange \ud83d\udcf1', 'Orange \ud83d\udcf1'],
    [null, null],
    [undefined, null],
  ])('%p → %p', (upstream, brand) => {
    expect(brandName(upstream)).toBe(brand);
  });

  it('keeps a brand short (120 characters at most)', () => {
    expect(brandName(`${'x'.repeat(200)}:1234 - SVR/2`)).toBe('x'.repeat(120));
  });

  it('cuts at 120 code points, never inside a surrogate pair', () => {
    const brand = brandName(`${'x'.repeat(119)}${'\u{1F4F1}'.repeat(5)}`);
    expect(brand).toBe(`${'x'.repeat(119)}\u{1F4F1}`);
    expect(brand?.isWellFormed()).toBe(true);
    expect(brandName('\u{1F4F1}'.repeat(200))).toBe('\u{1F4F1}'.repeat(120));
  });
});

describe('429 Retry-After → how long no request is sent', () => {
  const NOW = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['seconds', '5', 5_000],
    ['seconds with blanks', ' 7 ', 7_000],
    ['seconds past the cap', '3600', 60_000],
    ['an absurd number of seconds', '99999999999999999999999', 60_000],
    ['an HTTP date 30 s ahead', 'Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    ['an HTTP date an hour ahead', 'Thu, 01 Jan 2026 01:00:00 GMT', 60_000],
    ['an HTTP date in the past', 'Wed, 31 Dec 2025 23:59:00 GMT', 1_000],
    ['zero', '0', 1_000],
    ['a negative number', '-5', 1_000],
    ['garbage', 'soon', 1_000],
    ['empty', '', 1_000],
    ['no header', undefined, 1_000],
  ])('%s (%p) → %p ms', (_name, header, waitMs) => {
    expect(rateLimitWaitMs(header, NOW)).toBe(waitMs);
  });
});
