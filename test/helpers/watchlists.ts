import request from 'supertest';
import type { App } from 'supertest/types';
import { randomBytes } from 'node:crypto';
import { CallbackReceiver, startReceiver } from './callback-receiver';
import { eventually } from './eventually';
import { startTestApp, TestApp } from './test-app';

export interface WatchlistBody {
  status: string;
  total: number;
  last_round: { round: number; status: string; checked: number; failed: number; changes: number } | null;
  entries: Array<{
    phone: string;
    reference: string | null;
    result: Record<string, unknown> | null;
    answered_by?: Record<string, { provider: string; observed_at: string }> | null;
    error: string | null;
    checked_at: string | null;
  }>;
  [key: string]: unknown;
}

/** Polls GET /api/v1/watchlists/{id} until round `round` has completed; returns the last body. */
export async function waitForRound(target: App | string, auth: { Authorization: string }, id: string, round: number, timeoutMs = 30_000): Promise<WatchlistBody> {
  const body = await eventually(
    async () => {
      const res = await request(target).get(`/api/v1/watchlists/${id}?limit=1000`).set(auth);
      if (res.status !== 200) throw new Error(`GET watchlist ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as WatchlistBody;
    },
    (w) => w.last_round !== null && w.last_round.round >= round && w.last_round.status === 'completed',
    timeoutMs,
  );
  if (!(body.last_round && body.last_round.round >= round && body.last_round.status === 'completed')) {
    throw new Error(`round ${round} of watchlist ${id} did not complete in ${timeoutMs} ms: ${JSON.stringify(body.last_round)}`);
  }
  return body;
}

/**
 * The app with the sandbox provider, its watchlist workers polling every 100 ms in a schedule group of
 * their own, and a receiver of their callbacks on 127.0.0.1 (private callbacks allowed); `env` adds to it.
 */
export async function startSandboxWatchlists(
  group: string,
  env: Record<string, string> = {},
): Promise<{ app: TestApp; receiver: CallbackReceiver; close: () => Promise<void> }> {
  const receiver = await startReceiver([], '/hooks/watchlist');
  const app = await startTestApp({
    PROVIDER: 'sandbox',
    PROVIDER_TIMEOUT_MS: '300',
    WATCHLIST_SCHEDULE_GROUP: `${group}-${randomBytes(4).toString('hex')}`,
    WATCHLIST_POLL_INTERVAL_MS: '100',
    BULK_WEBHOOK_RETRY_DELAY_SECONDS: '1',
    BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  });
  return { app, receiver, close: async () => (await app.close(), await receiver.close()) };
}
