import { randomBytes } from 'node:crypto';
import type { HttpAccount, Instance } from './instances';

/** One HTTP attempt of a paid call, as the test saw it. */
export interface Attempt {
  instance: number;
  /** 0: no answer (connection refused or cut). */
  status: number;
  code?: string;
  /** When it was sent and when its answer (or failure) arrived, by the test's clock. */
  sentAt: number;
  at: number;
}

/** One paid call: its `source` names its ledger rows; keyed calls are retried across instances with their key. */
export interface Call {
  source: string;
  key?: string;
  body: string;
  failing: boolean;
  attempts: Attempt[];
}

export interface Load {
  /** Every attempt so far, in the order they ended. */
  attempts(): Attempt[];
  /**
   * Resolves once `accept` says yes of the attempts that ended after `since` (an index into attempts():
   * 0 for all), looked at as each one ends; rejects after `timeoutMs` (a deadline for a failure only).
   */
  until(since: number, accept: (attempts: Attempt[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops sending, waits for the calls in flight; returns every call made. */
  stop(): Promise<Call[]>;
}

/** How long a load may take to show what a test waits for: far more than a busy machine needs. */
export const LOAD_DEADLINE_MS = 120_000;

const WORKERS = 8;
const KEYED_SHARE = 0.4;
const FAILING_SHARE = 0.05;
const MAX_ATTEMPTS = 4;
const RETRY_PAUSE_MS = 300;

/**
 * A mixed load on every instance: calls with and without an Idempotency-Key (keyed ones retried on
 * the other instance after no answer, 409 or 5xx, and replayed once more after their 200), on new
 * numbers each time, a few of them numbers the upstream fails.
 */
export function startLoad(instances: Instance[], account: HttpAccount): Load {
  const run = randomBytes(3).toString('hex');
  const calls: Call[] = [];
  const ended: Attempt[] = [];
  const watchers = new Set<() => void>();
  const record = (call: Call, attempt: Attempt) => {
    call.attempts.push(attempt);
    ended.push(attempt);
    for (const watcher of watchers) watcher();
  };
  let stopping = false;
  let seq = 0;
  const worker = async () => {
    while (!stopping) {
      const n = seq++;
      const failing = Math.random() < FAILING_SHARE;
      const keyed = Math.random() < KEYED_SHARE;
      const source = `${keyed ? 'k' : 'n'}-${run}-${n}`;
      const body = JSON.stringify({ phone: phoneFor(n, failing), source });
      const call: Call = { source, body, failing, attempts: [], ...(keyed ? { key: `key-${run}-${n}` } : {}) };
      calls.push(call);
      for (let attempt = 0; attempt < (keyed ? MAX_ATTEMPTS : 1); attempt++) {
        const index = (n + attempt) % instances.length;
        const sentAt = Date.now();
        const outcome = await send(instances[index].url, account, body, call.key);
        record(call, { instance: index, ...outcome, sentAt, at: Date.now() });
        if (outcome.status === 200 && keyed) {
          // A retry of an answered call, on the other instance: a replay, never a second charge.
          const other = (index + 1) % instances.length;
          const replaySentAt = Date.now();
          record(call, { instance: other, ...(await send(instances[other].url, account, body, call.key)), sentAt: replaySentAt, at: Date.now() });
        }
        if (!keyed || !(outcome.status === 0 || outcome.status === 409 || outcome.status >= 500)) break;
        await pause(RETRY_PAUSE_MS);
      }
      if (call.attempts.at(-1)!.status === 0) await pause(RETRY_PAUSE_MS); // an instance is down: do not spin on it
    }
  };
  const workers = Array.from({ length: WORKERS }, () => worker());
  return {
    attempts: () => ended.slice(),
    until: (since, accept, timeoutMs = LOAD_DEADLINE_MS) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!accept(ended.slice(since))) return;
          watchers.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`the load did not show what the test waited for within ${timeoutMs} ms (${ended.length - since} attempts since)`));
        }, timeoutMs);
        watchers.add(check);
        check();
      }),
    stop: async () => {
      stopping = true;
      await Promise.all(workers);
      return calls;
    },
  };
}

/** A client coming back later: every keyed call sent once more with its key and body, on the other instance. */
export async function retryKeyedCalls(instances: Instance[], account: HttpAccount, calls: Call[]): Promise<void> {
  const keyed = calls.filter((call) => call.key);
  for (let i = 0; i < keyed.length; i += WORKERS) {
    await Promise.all(
      keyed.slice(i, i + WORKERS).map(async (call) => {
        const index = (call.attempts.at(-1)!.instance + 1) % instances.length;
        const sentAt = Date.now();
        call.attempts.push({ instance: index, ...(await send(instances[index].url, account, call.body, call.key)), sentAt, at: Date.now() });
      }),
    );
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function send(url: string, account: HttpAccount, body: string, key: string | undefined): Promise<{ status: number; code?: string }> {
  try {
    const res = await fetch(`${url}/api/v1/filter`, {
      method: 'POST',
      headers: { ...account.auth, 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
      body,
      signal: AbortSignal.timeout(15_000),
    });
    const answer = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
    return { status: res.status, ...(answer.error?.code ? { code: answer.error.code } : {}) };
  } catch {
    return { status: 0 };
  }
}

/** A UK mobile number, new for every call of a load; failing ones end in 0003 (the upstream answers 500). */
function phoneFor(n: number, failing: boolean): string {
  return failing ? `+4474${String(n % 10_000).padStart(4, '0')}0003` : `+4474${String(n % 10_000_000).padStart(7, '0')}5`;
}
