import { digestSignature } from '../../src/provider/adapters/hlr-lookups.protocol';
import { checkSdkSigning, sdkBody, sdkHeaders, SDK_REQUESTS } from './sdk-signing';
import { startUpstreamSimulator, UpstreamSimulator } from './simulator';

describe('request signing: the official SDKs, the adapter and the simulator agree', () => {
  let sim: UpstreamSimulator;
  beforeAll(async () => (sim = await startUpstreamSimulator()));
  afterAll(() => sim.close());

  it.each(['', '/api/v2'])('the simulator accepts every SDK’s signature and refuses a wrong secret (base path %p)', async (prefix) => {
    const results = await checkSdkSigning(`${sim.url}${prefix}`, 'sim-key', 'sim-secret');
    expect(results).toHaveLength(3 * SDK_REQUESTS.length);
    for (const result of results) {
      expect(result).toEqual({ ...result, status: 200, wrongSecretStatus: 401, sameAsAdapter: true });
    }
  });

  it('signs path + timestamp + METHOD + body, as the SDKs do (a vector computed outside this code base)', () => {
    // printf '%s' '/hlr-lookup1700000000POST{"msisdn":"+447400123456"}' | openssl dgst -sha256 -hmac sim-secret -hex
    const request = { method: 'POST' as const, endpoint: '/hlr-lookup', params: { msisdn: '+447400123456' } };
    const expected = 'f17493511b3637744b2bb64595231cbfc6c23a26680e5817766f14ea7b0c16a9';
    for (const sdk of ['node', 'php', 'ruby'] as const) {
      expect(sdkHeaders(sdk, request, 'sim-key', 'sim-secret', 1700000000)['X-Digest-Signature']).toBe(expected);
    }
    expect(digestSignature('sim-secret', '/hlr-lookup', 1700000000, 'POST', '{"msisdn":"+447400123456"}')).toBe(expected);
  });

  it('keeps each SDK’s body rules: GET signs nothing, node-sdk signs "{}" for an empty POST, php escapes "/"', () => {
    expect(sdkBody('node', { method: 'GET', endpoint: '/auth-test', params: { a: 'b' } })).toBe('');
    expect(sdkBody('node', { method: 'POST', endpoint: '/x', params: null })).toBe('{}');
    expect(sdkBody('php', { method: 'POST', endpoint: '/x', params: {} })).toBe('');
    expect(sdkBody('ruby', { method: 'POST', endpoint: '/x', params: {} })).toBe('');
    expect(sdkBody('php', { method: 'POST', endpoint: '/x', params: { url: 'https://a/b', name: 'é' } })).toBe('{"url":"https:\\/\\/a\\/b","name":"\\u00e9"}');
  });
});
