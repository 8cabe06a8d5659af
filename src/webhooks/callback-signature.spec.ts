import { signCallback, verifyCallback } from './callback-signature';

describe('completion callback signature', () => {
  const body = '{"id":"5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10","status":"completed","total":3}';

  it('is the hex HMAC-SHA256 of "<timestamp>.<body>" with the webhook secret', () => {
    // echo -n '1763800000.<body>' | openssl dgst -sha256 -hmac whsec_test
    expect(signCallback('whsec_test', '1763800000', body)).toMatch(/^[0-9a-f]{64}$/);
    expect(signCallback('whsec_test', '1763800000', body)).not.toBe(signCallback('whsec_test', '1763800001', body));
  });

  it('verifies a fresh signature and refuses a changed body, a wrong secret or an old timestamp', () => {
    const signature = signCallback('whsec_test', '1763800000', body);
    const headers = { signature, timestamp: '1763800000' };
    expect(verifyCallback('whsec_test', headers, body, 1763800010)).toBe(true);
    expect(verifyCallback('whsec_test', headers, body.replace('3', '4'), 1763800010)).toBe(false);
    expect(verifyCallback('other', headers, body, 1763800010)).toBe(false);
    expect(verifyCallback('whsec_test', headers, body, 1763800000 + 301)).toBe(false);
    expect(verifyCallback('whsec_test', { signature: undefined, timestamp: '1763800000' }, body, 1763800010)).toBe(false);
  });
});
