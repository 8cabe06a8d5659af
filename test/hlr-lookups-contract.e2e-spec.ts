import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { UpstreamFailure } from '../src/provider/port/upstream-failure';
import { checkFields, hlrLookupsAdapter } from './provider-helpers';
import { HlrLookupsAdapter } from '../src/provider/adapters/hlr-lookups.adapter';
import { hlrLookupAnswer, mnpLookupAnswer, ntLookupAnswer } from '../src/provider/adapters/hlr-lookups.schema';

/**
 * The documented example answers (test/fixtures/hlr-lookups, our own copies of the documentation's
 * examples) and variants of them, replayed over HTTP through the real adapter: what each documented
 * status turns into for our contract, and that an answer off the schema is a failure, never a guess.
 */
const FIXTURES = path.join(__dirname, 'fixtures', 'hlr-lookups');
const documented = (name: 'hlr-lookup' | 'nt-lookup' | 'mnp-lookup'): Record<string, unknown> =>
  JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8')) as Record<string, unknown>;
const HLR = documented('hlr-lookup');
const NT = documented('nt-lookup');
const MNP = documented('mnp-lookup');

/** Answers every POST with the body set for its path: the upstream as its documentation shows it. */
class ReplayUpstream {
  readonly bodies = new Map<string, unknown>();
  private server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const text = JSON.stringify(this.bodies.get(request.url ?? '') ?? { errors: ['no body set'] });
        response.writeHead(this.bodies.has(request.url ?? '') ? 200 : 404, { 'Content-Type': 'application/json' });
        response.end(text);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function failureKind(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UpstreamFailure);
  expect((error as UpstreamFailure).reason).not.toBe('timeout');
  return (error as UpstreamFailure).kind;
}

describe('hlr-lookups adapter: the documented answers (contract)', () => {
  const upstream = new ReplayUpstream();
  let adapter: HlrLookupsAdapter;
  beforeAll(() => upstream.start());
  afterAll(() => upstream.close());
  beforeEach(() => {
    upstream.bodies.clear();
    adapter = hlrLookupsAdapter({
      baseUrl: upstream.url,
      key: 'k',
      secret: 's',
      timeoutMs: 2000,
      retries: 0,
      breaker: { failureRate: 0.99, windowMs: 1000, minCalls: 100000, halfOpenMs: 1000 }, batchSockets: 30,
    });
  });
  afterEach(() => adapter.onModuleDestroy());

  const answer = (body: Record<string, unknown>, overrides: Record<string, unknown> = {}) => ({ ...body, ...overrides });
  /** The check each endpoint answers, asked by name for the number of its documented example. */
  const ASKED: Record<string, [check: string, e164: string]> = {
    '/hlr-lookup': ['network_status', '+14156226819'],
    '/nt-lookup': ['line_type', '+4989702626'],
    '/mnp-lookup': ['portability', '+14156226819'],
  };
  const askAt = (path: string) => checkFields(adapter, ...ASKED[path]);

  it('accepts each documented example under its schema', () => {
    expect(hlrLookupAnswer.safeParse(HLR).success).toBe(true);
    expect(ntLookupAnswer.safeParse(NT).success).toBe(true);
    expect(mnpLookupAnswer.safeParse(MNP).success).toBe(true);
  });

  it('answers the documented HLR example CONNECTED with the ported-to operator', async () => {
    upstream.bodies.set('/hlr-lookup', HLR);
    await expect(checkFields(adapter, 'network_status', '+14156226819')).resolves.toEqual({ status: 'CONNECTED', carrier: 'T-Mobile US' });
  });

  it('answers the documented NT example as a fixed line', async () => {
    upstream.bodies.set('/nt-lookup', NT);
    await expect(checkFields(adapter, 'line_type', '+4989702626')).resolves.toEqual({ line_type: 'FIXED_LINE' });
  });

  it('answers the documented MNP example ported, with the brand and not the upstream’s "T-Mobile US:6529 - SVR/2"', async () => {
    upstream.bodies.set('/mnp-lookup', MNP);
    await expect(checkFields(adapter, 'portability', '+14156226819')).resolves.toEqual({ is_ported: true, carrier: 'T-Mobile US' });
  });

  it('adds up the documented cost of each answered lookup, by endpoint', async () => {
    upstream.bodies.set('/hlr-lookup', HLR).set('/mnp-lookup', MNP);
    await checkFields(adapter, 'network_status', '+14156226819');
    await checkFields(adapter, 'network_status', '+14156226819');
    await checkFields(adapter, 'portability', '+14156226819');
    expect(Object.fromEntries(adapter.tally.costByPath())).toEqual({ '/hlr-lookup': 0.02, '/mnp-lookup': 0.005 });
  });

  it.each([
    ['CONNECTED, not ported: the original operator', { is_ported: false, ported_network_name: null }, { status: 'CONNECTED', carrier: 'Verizon Wireless' }],
    ['ABSENT', { connectivity_status: 'ABSENT' }, { status: 'ABSENT', carrier: 'T-Mobile US' }],
    ['INVALID_MSISDN: ABSENT, no operator', { connectivity_status: 'INVALID_MSISDN' }, { status: 'ABSENT', carrier: null }],
    ['UNDETERMINED (completed): the contract’s UNDETERMINED', { connectivity_status: 'UNDETERMINED' }, { status: 'UNDETERMINED', carrier: 'T-Mobile US' }],
    ['completed with an error_code: the answer stands', { connectivity_status: 'UNDETERMINED', error_code: 4 }, { status: 'UNDETERMINED', carrier: 'T-Mobile US' }],
  ])('maps an HLR answer %s', async (_name, overrides, expected) => {
    upstream.bodies.set('/hlr-lookup', answer(HLR, overrides));
    await expect(checkFields(adapter, 'network_status', '+14156226819')).resolves.toEqual(expected);
  });

  it.each([
    ['HLR', null, '/hlr-lookup', { status: 'CONNECTED', carrier: null }],
    ['HLR', ':1234 - SVR/2', '/hlr-lookup', { status: 'CONNECTED', carrier: null }],
    ['MNP', null, '/mnp-lookup', { is_ported: true, carrier: null }],
    ['MNP', ':1234 - SVR/2', '/mnp-lookup', { is_ported: true, carrier: null }],
  ])('answers a ported %s number whose new operator is unknown (ported_network_name %p) with no carrier, never the one it left', async (_lookup, portedName, path, expected) => {
    upstream.bodies.set(path, answer(path === '/hlr-lookup' ? HLR : MNP, { is_ported: true, ported_network_name: portedName }));
    await expect(askAt(path)).resolves.toEqual(expected);
  });

  it.each([
    ['processing_status REJECTED', '/hlr-lookup', answer(HLR, { processing_status: 'REJECTED', connectivity_status: 'UNDETERMINED', error_code: 1 }), 'processing_rejected'],
    ['processing_status FAILED', '/hlr-lookup', answer(HLR, { processing_status: 'FAILED', error_code: 2 }), 'processing_failed'],
    ['an MNP query_status FAILED (even with is_ported: false)', '/mnp-lookup', answer(MNP, { query_status: 'FAILED', is_ported: false, error_code: 2 }), 'query_failed'],
    ['an NT query_status FAILED', '/nt-lookup', answer(NT, { query_status: 'FAILED', number_type: null, is_valid: null }), 'query_failed'],
  ])('fails (refunded 503 for the caller) on %s', async (_name, path, body, kind) => {
    upstream.bodies.set(path, body);
    expect(await failureKind(askAt(path))).toBe(kind);
    expect(adapter.tally.failureCounts()).toEqual([{ path, kind, count: 1 }]);
  });

  it('NT is_valid: false on a number our plan accepts, with no type: refunded as no_coverage (asked elsewhere), never a charged UNKNOWN', async () => {
    upstream.bodies.set('/nt-lookup', answer(NT, { is_valid: false, invalid_reason: 'not a number', number_type: 'UNKNOWN' }));
    expect(await failureKind(checkFields(adapter, 'line_type', '+4989702626'))).toBe('no_coverage');
    expect(adapter.tally.failureCounts()).toEqual([{ path: '/nt-lookup', kind: 'no_coverage', count: 1 }]);
  });

  it('NT is_valid: false that still gives a type: answered from the type it looked up', async () => {
    upstream.bodies.set('/nt-lookup', answer(NT, { is_valid: false, invalid_reason: 'not a number', number_type: 'LANDLINE' }));
    await expect(checkFields(adapter, 'line_type', '+4989702626')).resolves.toEqual({ line_type: 'FIXED_LINE' });
  });

  describe('an OK NT answer with a number_type we do not know', () => {
    let warned: jest.SpyInstance;
    beforeEach(() => (warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined)));
    afterEach(() => warned.mockRestore());

    it('answers UNKNOWN, counts each one as kind unknown_number_type and logs each distinct word once', async () => {
      for (const word of ['HOLOGRAM', '', 'HOLOGRAM', 'TELEX\n']) {
        upstream.bodies.set('/nt-lookup', answer(NT, { number_type: word }));
        await expect(checkFields(adapter, 'line_type', '+4989702626')).resolves.toEqual({ line_type: 'UNKNOWN' });
      }
      expect(adapter.tally.failureCounts()).toEqual([{ path: '/nt-lookup', kind: 'unknown_number_type', count: 4 }]);
      expect(warned.mock.calls.map((call) => call[0])).toEqual([
        expect.stringContaining('unknown number_type "HOLOGRAM"'),
        expect.stringContaining('unknown number_type ""'),
        expect.stringContaining('unknown number_type "TELEX\\n"'),
      ]);
    });

    it('does not count the documented words, nor the word of an invalid number (that one is no_coverage)', async () => {
      upstream.bodies.set('/nt-lookup', answer(NT, { number_type: 'MOBILE' }));
      await checkFields(adapter, 'line_type', '+4989702626');
      expect(adapter.tally.failureCounts()).toEqual([]);
      expect(warned).not.toHaveBeenCalled();
      upstream.bodies.set('/nt-lookup', answer(NT, { is_valid: false, number_type: '' }));
      expect(await failureKind(checkFields(adapter, 'line_type', '+4989702626'))).toBe('no_coverage');
      expect(adapter.tally.failureCounts()).toEqual([{ path: '/nt-lookup', kind: 'no_coverage', count: 1 }]);
      expect(warned.mock.calls.map((call) => String(call[0]))).not.toContainEqual(expect.stringContaining('unknown number_type'));
    });
  });

  describe('an answer off the schema is an upstream failure, logged once with the field that broke', () => {
    let logged: jest.SpyInstance;
    beforeEach(() => (logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined)));
    afterEach(() => logged.mockRestore());

    it.each([
      ['cost as a number', '/hlr-lookup', answer(HLR, { cost: 0.01 }), 'cost'],
      ['an undocumented connectivity_status', '/hlr-lookup', answer(HLR, { connectivity_status: 'ONLINE' }), 'connectivity_status'],
      ['no processing_status', '/hlr-lookup', answer(HLR, { processing_status: undefined }), 'processing_status'],
      ['an ISO timestamp', '/hlr-lookup', answer(HLR, { timestamp: '2020-08-07T19:16:17.676Z' }), 'timestamp'],
      ['is_ported as a string', '/mnp-lookup', answer(MNP, { is_ported: 'true' }), 'is_ported'],
      ['an OK MNP answer without is_ported', '/mnp-lookup', answer(MNP, { is_ported: null }), 'is_ported'],
      ['regions as a string', '/nt-lookup', answer(NT, { regions: 'Munich' }), 'regions'],
      ['an array instead of an object', '/mnp-lookup', [MNP], '(body)'],
    ])('%s', async (_name, path, body, field) => {
      upstream.bodies.set(path, body);
      expect(await failureKind(askAt(path))).toBe('invalid_answer');
      expect(await failureKind(askAt(path))).toBe('invalid_answer');
      expect(logged).toHaveBeenCalledTimes(1);
      expect(logged.mock.calls[0][0]).toContain(`${path} answer does not match the documented schema at ${field}`);
      expect(adapter.tally.failureCounts()).toEqual([{ path, kind: 'invalid_answer', count: 2 }]);
      expect(adapter.tally.costByPath().size).toBe(0);
    });
  });
});
