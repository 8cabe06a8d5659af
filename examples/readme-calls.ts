/**
 * The README's calls, written against the generated types (examples/api-types.ts, openapi-typescript's
 * default output). `npm run lint` type-checks this file: a request field the document marks required
 * without the service requiring it (as `source`, once, for having a default) fails the build.
 * Not meant to be run; examples/typed-client.ts is the runnable client.
 */
import createClient from 'openapi-fetch';
import type { paths } from './api-types';

export async function readmeCalls(apiKey: string): Promise<void> {
  const client = createClient<paths>({ baseUrl: 'http://localhost:3000', headers: { Authorization: `Bearer ${apiKey}` } });
  // The tour's first call: the number only.
  await client.POST('/api/v1/filter', { body: { phone: '+447400123456' } });
  // Freshness: no optional header needed, but one may be given.
  await client.POST('/api/v1/filter', { body: { phone: '+447400123456' }, params: { header: { 'Cache-Control': 'no-cache' } } });
  await client.GET('/api/v1/balance');
  await client.PATCH('/api/v1/settings', { body: { checks: { line_type: false } } });
  await client.POST('/api/v1/filter/bulk/quote', { body: { phones: ['+447400123456', '+447400123457'] } });
  await client.POST('/api/v1/filter/bulk', {
    body: { phones: ['+447400123456', { phone: '+447400123457', reference: 'crm-1' }] },
    params: { header: { 'Idempotency-Key': 'import-2026-11-24' } },
  });
  await client.POST('/api/v1/watchlists', { body: { name: 'crm', phones: ['+447400120005'], interval: 'weekly' } });
}
