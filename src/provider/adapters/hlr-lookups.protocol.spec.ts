import { LINE_TYPES } from '../lookup.types';
import { digestHeaders, digestSignature, lineTypeFromUpstream, UPSTREAM_NUMBER_TYPES, upstreamNumberType } from './hlr-lookups.protocol';

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

  it('maps every upstream word to a contract LineType', () => {
    for (const lineType of Object.values(UPSTREAM_NUMBER_TYPES)) expect(LINE_TYPES).toContain(lineType);
  });
});
