/**
 * A typed client of the Phone Filter API: openapi-fetch with the types openapi-typescript generated from
 * openapi.json into examples/api-types.ts (`npm run openapi:types`). Paths, bodies, parameters and
 * answers are checked by the compiler: a typo in a path or a field does not compile.
 *
 *   API_KEY=pf_live_... BASE_URL=http://localhost:3000 npx ts-node --transpile-only examples/typed-client.ts [+447400123456]
 *
 * Runs on Node 20 as CommonJS: openapi-fetch is an ES module package but ships a CommonJS build
 * ("require" export), which is what ts-node loads here. Exit codes: 0 done, 1 the API refused, 2 usage.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './api-types';

type ApiError = components['schemas']['Error'];

const apiKey = process.env.API_KEY;
const baseUrl = process.env.BASE_URL ?? 'http://localhost:3000';
const phone = process.argv[2] ?? '+447400123456';

/** Every call carries the key; openapi-fetch adds the JSON content type to bodies. */
const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });

async function main(): Promise<number> {
  if (!apiKey) {
    console.error('Set API_KEY to an API key (pf_live_...), and BASE_URL if the service is not on http://localhost:3000.');
    return 2;
  }

  const balance = await client.GET('/api/v1/balance');
  if (balance.error) return refused('GET /api/v1/balance', balance.response, balance.error);
  console.log(`balance: ${balance.data.balance} credits`);

  const settings = await client.GET('/api/v1/settings');
  if (settings.error) return refused('GET /api/v1/settings', settings.response, settings.error);
  const checks = Object.entries(settings.data.checks).map(([check, on]) => `${check}=${on ? 'on' : 'off'}`);
  console.log(`settings: ${checks.join(' ')}, ${settings.data.cost_per_call} credits per call`);

  const filtered = await client.POST('/api/v1/filter', {
    body: { phone, source: 'typed-client' },
    // A retry of this very call (same key, same body) within 24 h is answered again and not charged again.
    params: { header: { 'Idempotency-Key': `typed-client-${phone}-${Date.now()}` } },
  });
  if (filtered.error) return refused('POST /api/v1/filter', filtered.response, filtered.error);
  const result = filtered.data; // { country, valid, status, carrier, line_type, is_ported }
  console.log(`filter ${phone}: ${JSON.stringify(result)}`);
  console.log(`rate limit: ${filtered.response.headers.get('RateLimit-Remaining')} of ${filtered.response.headers.get('RateLimit-Limit')} left`);

  const after = await client.GET('/api/v1/balance');
  if (after.error) return refused('GET /api/v1/balance', after.response, after.error);
  console.log(`balance after: ${after.data.balance} credits`);

  // What a bulk job of these entries would cost, before running it: nothing is charged or created.
  const quote = await client.POST('/api/v1/filter/bulk/quote', { body: { phones: [phone, { phone, reference: 'typed-client' }], source: 'typed-client', max_age: 0 } });
  if (quote.error) return refused('POST /api/v1/filter/bulk/quote', quote.response, quote.error);
  console.log(`bulk quote: ${quote.data.billable} of ${quote.data.total} billable, ${quote.data.cost} credits, ${quote.data.sufficient ? 'covered' : 'not covered'}`);
  return 0;
}

/** Every error of the API has the one body { error: { code, message } }. */
function refused(call: string, response: Response, body: ApiError): number {
  const retry = response.headers.get('Retry-After');
  console.error(`${call}: ${response.status} ${body.error.code}: ${body.error.message}${retry ? ` (retry after ${retry} s)` : ''}`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`Could not reach ${baseUrl}:`, error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
