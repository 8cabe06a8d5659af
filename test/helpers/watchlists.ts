import request from 'supertest';
import type { App } from 'supertest/types';
import { eventually } from './eventually';

export interface WatchlistBody {
  status: string;
  total: number;
  last_round: { round: number; status: string; checked: number; failed: number; changes: number } | null;
  entries: Array<{ phone: string; reference: string | null; result: Record<string, unknown> | null; error: string | null; checked_at: string | null }>;
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
