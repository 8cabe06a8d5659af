import { LRUCache } from 'lru-cache';
import { type HashKey, keyedHash } from '../../common/keyed-hash';
import { ERASURE_MARK_SECONDS } from '../../erasures/erasure-mark';
import type { NumberRanges } from '../number-ranges';
import type { ObservedCounts, VerificationCount } from '../scoring';
import type { CounterBatch, CounterStore, Later } from './counter-store';

/** A count of a batch (CounterBatch.count), as one verdict reads it. */
type Count = CounterBatch['count'];

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** Upper bounds (seconds) of the buckets of an account's feedback delays (ask → verified). */
const DELAY_BUCKETS = [5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 86_400];
/** Verified feedbacks (today and yesterday) before an account's own delays shorten its grace. */
const DELAY_SAMPLES = 20;
const MIN_GRACE_MS = 60_000;

/** A verdict asked: who asked, about which number, from where, when (the Clock's time). */
export interface Ask {
  accountId: string;
  source: string;
  e164: string;
  ranges: NumberRanges;
  country: string | null;
  ip: string | null;
  at: number;
  /** The account's verification_grace_seconds (its own feedback may shorten it). */
  graceSeconds: number;
}

/** What an account's feedback delays say: how soon an unverified verdict counts as not verified, and whether it sends feedback at all. */
interface FeedbackHabit {
  p95Ms: number | null;
  samples: number;
}

/** A short keyed hash (64 bits): what the counters hold instead of a number or a fine range. */
function shortHash(key: HashKey, value: string): string {
  return keyedHash(key, value).slice(0, 16);
}

/** The keys of the counters (docs/sms-pumping.md "What is kept"): ranges in clear, numbers and fine ranges as keyed hashes. */
const keys = {
  seen: (account: string, number: string) => `seen:${account}:${number}`,
  askedBy: (number: string) => `who:${number}`,
  range: (account: string, source: string, range: string) => `vr:${account}:${source}:${range}`,
  block: (account: string, source: string, block: string) => `vb:${account}:${source}:${block}`,
  ten: (account: string, source: string, ten: string) => `vt:${account}:${source}:${ten}`,
  deploymentRange: (range: string) => `vd:${range}`,
  ipNumbers: (account: string, ip: string) => `vi:${account}:${ip}`,
  ipCountries: (account: string, ip: string) => `ci:${account}:${ip}`,
  sourceCountries: (account: string, source: string) => `cs:${account}:${source}`,
  delays: (account: string, day: number) => `fd:${account}:${day}`,
  /** An erasure's mark: while it is set, no ask or feedback of the number writes its hash (docs/privacy.md). */
  erased: (number: string) => `erased:${number}`,
};

const ERASURE_MARK_MS = ERASURE_MARK_SECONDS * 1000;

/** The scopes whose verification rate is counted: asked (`ask:`), verified (`ok:`) and said not verified (`no:`) by asked time. */
interface Scopes {
  range: string;
  country: string;
  source: string;
  ip: string | null;
  deploymentRange: string;
}

function scopesOf(account: string, source: string, range: string, country: string | null, ip: string | null): Scopes {
  return {
    range: `r:${account}:${range}`,
    country: `c:${account}:${country ?? '--'}`,
    source: `s:${account}:${source}`,
    ip: ip === null ? null : `i:${account}:${ip}`,
    deploymentRange: `d:${range}`,
  };
}

/**
 * The risk verdict's memory of what was asked (RiskService): each ask recorded and the counts the
 * verdict needs read back in one batch (one Redis round trip); feedback attached to the ask it is
 * about. Holds ranges and keyed hashes, never a number (docs/privacy.md). Every window is counted back
 * from the time it is given (the Clock's), so tests move time instead of waiting.
 */
export class RiskCounters {
  private readonly habits = new LRUCache<string, FeedbackHabit>({ max: 50_000 });

  constructor(
    readonly store: CounterStore,
    private readonly hashKey: HashKey,
  ) {}

  /**
   * Records the ask and answers what the counters saw, this ask included. `record: false` only reads
   * (a bulk job's entry, docs/sms-pumping.md "Bulk jobs"): the counts the route would answer for this
   * ask, the number counted where its ask would have been, in the same one round trip; nothing is
   * written, so a list being checked is not a burst of sign-ups and takes no feedback.
   */
  async observe(ask: Ask, { record = true }: { record?: boolean } = {}): Promise<ObservedCounts> {
    const { accountId: a, source: s, ranges, at } = ask;
    const n = shortHash(this.hashKey, ask.e164);
    const ip = ask.ip === null ? null : shortHash(this.hashKey, ask.ip);
    const country = ask.country ?? '--';
    const habit = this.habits.get(a);
    const graceMs = graceOf(ask.graceSeconds * 1000, habit);
    const sendsFeedback = (habit?.samples ?? 0) >= DELAY_SAMPLES;
    const hourAgo = at - HOUR_MS;
    const b = this.store.batch();
    // Without recording, each count of a key the ask would have fed reads it as if fed (countAsIf).
    const fed = new Map<string, string>();
    // The number's own records and members (its hash): not written while an erasure's mark of it is set.
    const own = b.unlessMarked(keys.erased(n));
    const remember = (key: string, member: string, ttlMs: number): void => {
      if (record) (member === n ? own : b).remember(key, member, at, ttlMs);
      else fed.set(key, member);
    };
    const count: Count = (key, after, upTo) => {
      const member = fed.get(key);
      return member === undefined ? b.count(key, after, upTo) : b.countAsIf(key, member, at, after, upTo);
    };

    if (record) {
      own.setFields(keys.seen(a, n), { t: String(at), s, r: ranges.range, c: country, i: ip ?? '', d: sendsFeedback ? '1' : '0' }, DAY_MS);
      own.addMember(keys.askedBy(n), a, DAY_MS);
    }
    const lastHour = (key: string, ttlMs = HOUR_MS): Later<number> => {
      remember(key, n, ttlMs);
      return count(key, hourAgo, Infinity);
    };
    const rangeKey = keys.range(a, s, ranges.range);
    const rangeHour = lastHour(rangeKey, DAY_MS);
    const rangeDay = count(rangeKey, at - DAY_MS, Infinity);
    const blockHour = lastHour(keys.block(a, s, shortHash(this.hashKey, ranges.block)));
    const nearby = [lastHour(keys.ten(a, s, shortHash(this.hashKey, ranges.ten)))];
    for (const ten of [ranges.tenBefore, ranges.tenAfter]) if (ten) nearby.push(count(keys.ten(a, s, shortHash(this.hashKey, ten)), hourAgo, Infinity));
    const deploymentRangeHour = lastHour(keys.deploymentRange(ranges.range));
    const ipNumbers = ip === null ? null : lastHour(keys.ipNumbers(a, ip));
    let ipCountries: Later<number> | null = null;
    if (ip !== null) {
      remember(keys.ipCountries(a, ip), country, HOUR_MS);
      ipCountries = count(keys.ipCountries(a, ip), hourAgo, Infinity);
    }
    remember(keys.sourceCountries(a, s), country, HOUR_MS);
    const sourceCountries = count(keys.sourceCountries(a, s), hourAgo, Infinity);

    const scopes = scopesOf(a, s, ranges.range, ask.country, ip);
    const rate = (scope: string | null, counted = true): Later<VerificationCount> | null => {
      if (scope === null) return null;
      if (counted) remember(`ask:${scope}`, n, DAY_MS);
      return verificationOf(count, scope, at, graceMs);
    };
    const verification = {
      // The source's last hour apart: a burst on a source with a good day behind it shows at once.
      sourceHour: verificationOf(count, scopes.source, at, graceMs, hourAgo),
      range: rate(scopes.range)!,
      country: rate(scopes.country)!,
      source: rate(scopes.source)!,
      ip: rate(scopes.ip),
      // Across accounts, only the asks of accounts that send feedback count: another account's silence is not a failure.
      deploymentRange: rate(scopes.deploymentRange, sendsFeedback)!,
    };
    const sourceNumbersHour = count(`ask:${scopes.source}`, hourAgo, Infinity);
    const day = Math.floor(at / DAY_MS);
    const delays = [b.fields(keys.delays(a, day)), b.fields(keys.delays(a, day - 1))];

    await b.exec();
    this.habits.set(a, habitOf(delays.map((later) => later.value)));
    return {
      rangeHour: rangeHour.value,
      rangeDay: rangeDay.value,
      blockHour: blockHour.value,
      deploymentRangeHour: deploymentRangeHour.value,
      nearbyHour: nearby.reduce((sum, later) => sum + later.value, 0),
      ipNumbersHour: ipNumbers?.value ?? null,
      ipCountriesHour: ipCountries?.value ?? null,
      sourceCountriesHour: sourceCountries.value,
      sourceNumbersHour: sourceNumbersHour.value,
      verification: {
        range: verification.range.value,
        country: verification.country.value,
        source: verification.source.value,
        sourceHour: verification.sourceHour.value,
        ip: verification.ip?.value ?? null,
        deploymentRange: verification.deploymentRange.value,
      },
      graceSeconds: Math.round(graceMs / 1000),
    };
  }

  /**
   * Whether the code sent after the account's last verdict for this number (within 24 h) was verified,
   * counted in the verification rates of that verdict's scopes (by the time it was asked). Undefined
   * when the account asked no verdict for the number in 24 h. Feedback may be sent again (a code
   * verified on a second try): the last one counts.
   */
  async feedback(accountId: string, e164: string, verified: boolean, at: number): Promise<{ askedAt: number } | undefined> {
    const n = shortHash(this.hashKey, e164);
    const read = this.store.batch();
    const seen = read.fields(keys.seen(accountId, n));
    await read.exec();
    const { t, s, r, c, i, d, v } = seen.value;
    // By the Clock, not only by the key's expiry (Redis expires keys by its own time).
    if (t === undefined || at - Number(t) > DAY_MS) return undefined;
    const askedAt = Number(t);
    const scopes = scopesOf(accountId, s, r, c === '--' ? null : c, i === '' ? null : i);
    const write = this.store.batch();
    // An erasure between the read and this write: its mark stops the number's hash from coming back.
    const own = write.unlessMarked(keys.erased(n));
    for (const scope of [scopes.range, scopes.country, scopes.source, scopes.ip, d === '1' ? scopes.deploymentRange : null]) {
      if (scope === null) continue;
      own.remember(`${verified ? 'ok' : 'no'}:${scope}`, n, askedAt, DAY_MS);
      write.forgetMember(`${verified ? 'no' : 'ok'}:${scope}`, n);
    }
    if (verified && v !== '1') {
      // How long this account's real users take: the first verification of an ask counts once.
      const delayKey = keys.delays(accountId, Math.floor(at / DAY_MS));
      write.increment(delayKey, bucketOf(at - askedAt), 1, 2 * DAY_MS);
      own.setFields(keys.seen(accountId, n), { v: '1' }, DAY_MS);
    }
    await write.exec();
    return { askedAt };
  }

  /**
   * Erasure (docs/privacy.md): every account's record of asking for this number, and the number's keyed
   * hash in every counter those records lead to. How many asks were forgotten. The mark is set in the
   * script that reads whom to erase (and again in the one that erases): an ask or feedback whose write
   * lands after it writes nothing of the number, so what the erasure read is all there is to remove.
   */
  async forget(e164: string, ranges: NumberRanges): Promise<number> {
    const n = shortHash(this.hashKey, e164);
    const first = this.store.batch();
    first.mark(keys.erased(n), ERASURE_MARK_MS);
    const accounts = first.members(keys.askedBy(n));
    await first.exec();
    const second = this.store.batch();
    const records = accounts.value.map((account) => ({ account, seen: second.fields(keys.seen(account, n)) }));
    await second.exec();
    const erase = this.store.batch();
    const drop = (key: string) => erase.forgetMember(key, n);
    drop(keys.deploymentRange(ranges.range));
    for (const kind of ['ask', 'ok', 'no']) drop(`${kind}:d:${ranges.range}`);
    let forgotten = 0;
    for (const { account, seen } of records) {
      const { s, i, c } = seen.value;
      if (s === undefined) continue;
      forgotten += 1;
      const ip = i === '' || i === undefined ? null : i;
      const scopes = scopesOf(account, s, ranges.range, c === '--' ? null : c, ip);
      drop(keys.range(account, s, ranges.range));
      drop(keys.block(account, s, shortHash(this.hashKey, ranges.block)));
      drop(keys.ten(account, s, shortHash(this.hashKey, ranges.ten)));
      if (ip !== null) drop(keys.ipNumbers(account, ip));
      for (const scope of [scopes.range, scopes.country, scopes.source, scopes.ip]) {
        if (scope !== null) for (const kind of ['ask', 'ok', 'no']) drop(`${kind}:${scope}`);
      }
      erase.remove(keys.seen(account, n));
    }
    erase.remove(keys.askedBy(n));
    erase.mark(keys.erased(n), ERASURE_MARK_MS);
    await erase.exec();
    return forgotten;
  }
}

/**
 * Known outcomes of a scope, by asked time within the last 24 h (or since `since`): asks older than the
 * grace (with or without feedback), and younger asks that already have feedback; verified: asks with
 * `verified: true`.
 */
function verificationOf(count: Count, scope: string, at: number, graceMs: number, since = at - DAY_MS): Later<VerificationCount> {
  const dayAgo = since;
  const graceStart = at - graceMs;
  const old = count(`ask:${scope}`, dayAgo, graceStart);
  const youngVerified = count(`ok:${scope}`, graceStart, Infinity);
  const youngRefused = count(`no:${scope}`, graceStart, Infinity);
  const verified = count(`ok:${scope}`, dayAgo, Infinity);
  return {
    get value() {
      return { outcomes: old.value + youngVerified.value + youngRefused.value, verified: verified.value };
    },
  };
}

function bucketOf(delayMs: number): string {
  const seconds = delayMs / 1000;
  return String(DELAY_BUCKETS.find((bound) => seconds <= bound) ?? DELAY_BUCKETS[DELAY_BUCKETS.length - 1]);
}

/** The account's feedback delays (today's and yesterday's buckets) as their 95th percentile bucket. */
function habitOf(days: Array<Record<string, string>>): FeedbackHabit {
  const counts = DELAY_BUCKETS.map((bound) => days.reduce((sum, day) => sum + Number(day[String(bound)] ?? 0), 0));
  const samples = counts.reduce((sum, n) => sum + n, 0);
  if (samples === 0) return { p95Ms: null, samples };
  let seen = 0;
  const index = counts.findIndex((n) => (seen += n) >= 0.95 * samples);
  return { p95Ms: DELAY_BUCKETS[index] * 1000, samples };
}

/** The account's grace: its setting, shortened to three times its users' 95th percentile delay (at least 60 s) once it has enough feedback. */
function graceOf(configuredMs: number, habit: FeedbackHabit | undefined): number {
  if (!habit || habit.samples < DELAY_SAMPLES || habit.p95Ms === null) return configuredMs;
  return Math.min(configuredMs, Math.max(MIN_GRACE_MS, 3 * habit.p95Ms));
}
