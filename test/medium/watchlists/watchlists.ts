import { AdminModule } from '../../../src/admin/admin.module';
import type { AuthenticatedAccount } from '../../../src/auth/authenticated-account';
import type { CreateWatchlistDto, UpdateWatchlistDto, WatchlistDto } from '../../../src/watchlists/dto/watchlists.dto';
import { WatchlistWorker } from '../../../src/watchlists/watchlist-worker';
import { WatchlistsModule } from '../../../src/watchlists/watchlists.module';
import { WatchlistsService } from '../../../src/watchlists/watchlists.service';
import type { TestAccount } from '../../factories/accounts';
import { Medium, startMedium } from '../medium';

export { deferred, holdLookups } from '../lookups';

/** Where the callbacks of these watchlists would go (recorded in the outbox; nothing delivers in the medium tier). */
export const CALLBACK_URL = 'https://example.com/hooks/watchlist';

/** An instance of the watchlist service (its worker's poll a step the test runs), with the sandbox provider. */
export function startWatchlists(env: Record<string, string> = {}, joining?: Medium): Promise<Medium> {
  return startMedium({ imports: [WatchlistsModule, AdminModule], env: { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', ...env }, joining });
}

/** The account as the API key guard hands it to the routes. */
export function callerOf(account: TestAccount): AuthenticatedAccount {
  return { accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1000, windowSeconds: 1 } };
}

/** The watchlist routes of one instance, called as the controller calls them. */
export function watchlistsOf(m: Medium) {
  const service = m.get(WatchlistsService);
  return {
    create: async (account: TestAccount, body: CreateWatchlistDto, key?: string): Promise<{ id: string; [field: string]: unknown }> =>
      JSON.parse((await service.create(callerOf(account), body, key)).body),
    get: (account: TestAccount, id: string): Promise<WatchlistDto> => service.get(callerOf(account), id, 1000, undefined),
    update: (account: TestAccount, id: string, body: UpdateWatchlistDto) => service.update(callerOf(account), id, body),
    remove: (account: TestAccount, id: string) => service.remove(callerOf(account), id),
    checkNow: (account: TestAccount, id: string) => service.checkNow(callerOf(account), id),
  };
}

/**
 * Runs the instance's watchlist poll, as its schedule would, until a poll claims nothing, each time
 * waiting for the rounds it started to end; returns the ids of the watchlists claimed.
 */
export async function runRounds(m: Medium): Promise<string[]> {
  const worker = m.get(WatchlistWorker);
  const claimed: string[] = [];
  for (;;) {
    const now = await m.jobs.run<string[]>(WatchlistWorker.JOB);
    await worker.idle();
    if (now.length === 0) return claimed;
    claimed.push(...now);
  }
}

/** The callbacks recorded in the outbox for the watchlist, oldest first (what its callback_url would receive). */
export async function callbacksOf(m: Medium, watchlistId: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<{ payload: Record<string, unknown> }> = await m.db.query(`SELECT payload FROM account_events WHERE dedupe_key LIKE $1 ORDER BY id`, [
    `watchlist:${watchlistId}:%`,
  ]);
  return rows.map((row) => row.payload);
}

/** The time of the next 00:00 UTC after `ms`. */
export function nextUtcMidnight(ms: number): Date {
  const midnight = new Date(ms);
  midnight.setUTCHours(24, 0, 0, 0);
  return midnight;
}
