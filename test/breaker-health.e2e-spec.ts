import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkFields, hlrLookupsAdapter } from './provider-helpers';
import { HlrLookupsAdapter } from '../src/provider/adapters/hlr-lookups.adapter';
import { freePort } from './helpers/service-process';

const BREAKER = { failureRate: 0.5, windowMs: 10_000, minCalls: 5, halfOpenMs: 60_000 };

function adapterAt(baseUrl: string): HlrLookupsAdapter {
  return hlrLookupsAdapter({ baseUrl, key: 'k', secret: 's', timeoutMs: 1000, retries: 0, breaker: BREAKER, batchSockets: 6 });
}

/** Reasons of `count` lookups one after the other ('ok' for an answer). */
async function reasons(adapter: HlrLookupsAdapter, count: number): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < count; i++) {
    seen.push(await checkFields(adapter, 'network_status', '+447400123456').then(() => 'ok', (error: { reason?: string }) => String(error.reason)));
  }
  return seen;
}

describe('the breaker counts what says the upstream is unhealthy, and only that', () => {
  it('an upstream refusing connections opens the breaker once the minimum number of calls failed', async () => {
    const adapter = adapterAt(`http://127.0.0.1:${await freePort()}`);
    try {
      const seen = await reasons(adapter, BREAKER.minCalls + 3);
      expect(seen.slice(0, BREAKER.minCalls)).toEqual(Array(BREAKER.minCalls).fill('network'));
      expect(adapter.circuitState('interactive')).toBe('open'); // main: 'closed' however many connections were refused
      expect(seen.at(-1)).toBe('circuit_open');
      expect(adapter.circuitState('batch')).toBe('closed');
    } finally {
      adapter.onModuleDestroy();
    }
  });

  it('an upstream answering 4xx is reachable: the breaker stays closed, and 4xx dilutes the failure rate of 5xx', async () => {
    let status = 401;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ errors: ['no'] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const adapter = adapterAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      expect(new Set(await reasons(adapter, 20))).toEqual(new Set(['unauthorized']));
      expect(adapter.circuitState('interactive')).toBe('closed');
      // 20 healthy answers (401) and 6 × 500 in the window: a failure rate under one half keeps it closed.
      status = 500;
      await reasons(adapter, 6);
      expect(adapter.circuitState('interactive')).toBe('closed'); // main: 6 of 6 counted calls failed, open
    } finally {
      adapter.onModuleDestroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

// The lanes share no upstream state (a 429 met by batch work holds back batch work only, for its Retry-After):
// test/medium/provider/breakers.medium-spec.ts, on the clock.
