/**
 * The traffic of `npm run bench:fraud` (docs/benchmark.md, "SMS pumping"): one simulated day of sign-ups
 * on one account, legitimate ones mixed with pumping attacks, each ask with the feedback its sender
 * would give. Seeded: the same seed gives the same day. Every number comes from libphonenumber's
 * metadata (a country's example number of the type, its last digits drawn until the plan calls it valid
 * and of that type), so the verdict sees what it would see in production: no number is made to match a
 * rule.
 */
import { type CountryCode, getExampleNumber, type NumberType, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/examples.mobile.json';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** Who sent an ask: legitimate sign-ups, or one of the attacks. */
export type Actor = 'legitimate' | 'fast burst' | 'slow spread' | 'premium rate' | 'many countries';
export const ATTACKS: readonly Actor[] = ['fast burst', 'slow spread', 'premium rate', 'many countries'];

export interface Ask {
  /** Milliseconds since the start of the simulated day. */
  at: number;
  actor: Actor;
  phone: string;
  source: string;
  ip: string;
  /** What the sender says afterwards (after `delayMs`): verified or not; none when it sends nothing. */
  feedback?: { delayMs: number; verified: boolean };
}

/** mulberry32: a small seeded generator, so a run can be repeated. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Where legitimate sign-ups come from, by weight: large markets first, a long tail, and some sign-ups of
 * the destinations the default table rates high (real people live there too).
 */
const LEGITIMATE_COUNTRIES: Array<[CountryCode, number]> = [
  ['US', 20], ['IN', 12], ['BR', 8], ['GB', 6], ['DE', 6], ['FR', 5], ['MX', 4], ['ID', 4], ['ES', 3], ['IT', 3],
  ['CA', 3], ['PH', 3], ['PK', 2], ['VN', 2], ['TR', 2], ['PL', 2], ['NL', 2], ['AU', 2], ['JP', 2], ['KR', 2],
  ['NG', 2], ['ZA', 1], ['EG', 1], ['TH', 1], ['AR', 1], ['CO', 1], ['KE', 1], ['SE', 1], ['CH', 1], ['BE', 1],
  ['PT', 1], ['RO', 1], ['UA', 1], ['MA', 1], ['PE', 1], ['CL', 1], ['IE', 0.5], ['GR', 0.5], ['HU', 0.5], ['CZ', 0.5],
  ['EC', 0.5], ['DZ', 0.3], ['LT', 0.3], ['LV', 0.3], ['AZ', 0.3], ['IQ', 0.2], ['GH', 0.5], ['BD', 1], ['MY', 1], ['SG', 0.5],
];

const MOBILE_TYPES: readonly NumberType[] = ['MOBILE', 'FIXED_LINE_OR_MOBILE'];

/**
 * A number of `country` valid for its plan and of `types`: its last `free` digits drawn, the others kept
 * from `base` (default: the country's example mobile number, of which only the calling code and the
 * first national digit are kept, so that numbers spread over the whole plan).
 */
export function numberOf(random: () => number, country: CountryCode, types: readonly NumberType[] = MOBILE_TYPES, base?: string, free?: number): string {
  const example = base ? undefined : getExampleNumber(country, examples);
  const start = base ?? example?.number;
  if (!start) throw new Error(`no example number for ${country}`);
  const drawn = free ?? example!.nationalNumber.length - 1;
  for (let attempt = 0; attempt < 2000; attempt++) {
    let digits = start.slice(0, Math.max(3, start.length - drawn));
    while (digits.length < start.length) digits += String(Math.floor(random() * 10));
    const parsed = parsePhoneNumberFromString(digits);
    const type = parsed?.getType();
    if (parsed?.isValid() && type && types.includes(type)) return parsed.number;
  }
  throw new Error(`no valid ${types.join('/')} number near ${start}`);
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)];
}

function weighted<T>(random: () => number, items: ReadonlyArray<[T, number]>): T {
  const total = items.reduce((sum, [, weight]) => sum + weight, 0);
  let left = random() * total;
  for (const [item, weight] of items) if ((left -= weight) < 0) return item;
  return items[items.length - 1][0];
}

function randomIp(random: () => number): string {
  return [1 + Math.floor(random() * 222), Math.floor(random() * 256), Math.floor(random() * 256), 1 + Math.floor(random() * 254)].join('.');
}

/** A verification delay as people take it: most within a minute, a tail to a few minutes. */
function humanDelay(random: () => number): number {
  return Math.round(1000 * Math.min(900, 8 + 25 * Math.exp(1.2 * (random() * 2 - 1) + random())));
}

/** Legitimate sign-ups: each number used once; most verified, some abandoned, some never reported. */
function legitimate(random: () => number, count: number, seen: Set<string>): Ask[] {
  const shared = Array.from({ length: 50 }, () => randomIp(random)); // offices and carrier NAT
  const asks: Ask[] = [];
  while (asks.length < count) {
    const phone = numberOf(random, weighted(random, LEGITIMATE_COUNTRIES));
    if (seen.has(phone)) continue;
    seen.add(phone);
    const roll = random();
    const feedback = roll < 0.85 ? { delayMs: humanDelay(random), verified: true } : roll < 0.9 ? { delayMs: 600_000, verified: false } : undefined;
    asks.push({ at: Math.floor(random() * DAY_MS), actor: 'legitimate', phone, source: random() < 0.9 ? 'signup-form' : 'mobile-app', ip: random() < 0.05 ? pick(random, shared) : randomIp(random), feedback });
  }
  return asks;
}

/** A fast burst: near-consecutive numbers of one high-cost mobile range, a few seconds apart, through the sign-up form from rotating proxies. */
function fastBurst(random: () => number, count: number, startAt: number): Ask[] {
  const first = numberOf(random, 'LV');
  let last = BigInt(first.slice(1));
  let at = startAt;
  return Array.from({ length: count }, () => {
    last += BigInt(1 + Math.floor(random() * 3));
    at += 500 + Math.floor(random() * 2500);
    return { at, actor: 'fast burst' as const, phone: `+${last}`, source: 'signup-form', ip: randomIp(random) };
  });
}

/** A slow attack: random numbers of a few ranges in several countries, minutes apart all day, interleaved with real sign-ups. */
function slowSpread(random: () => number, count: number): Ask[] {
  const ranges = (['AZ', 'LT', 'ID', 'GB', 'EC', 'PH'] as CountryCode[]).map((country) => numberOf(random, country));
  return Array.from({ length: count }, (_, i) => ({
    at: Math.floor(HOUR_MS + (i + random()) * ((22 * HOUR_MS) / count)),
    actor: 'slow spread' as const,
    phone: numberOf(random, 'GB', MOBILE_TYPES, pick(random, ranges), 4),
    source: 'signup-form',
    ip: randomIp(random),
  }));
}

/** Premium-rate numbers of several countries (the first digits of each country's premium range), over two hours. */
const PREMIUM_STARTS: Array<[CountryCode, string]> = [
  ['GB', '+449098790000'], ['DE', '+4990012345678'], ['FR', '+33891234567'], ['IT', '+39899123456'],
  ['ES', '+34803123456'], ['AT', '+43900123456'], ['CH', '+41900123456'], ['PL', '+48701234567'],
];

function premiumRate(random: () => number, count: number, startAt: number): Ask[] {
  const bases = PREMIUM_STARTS.flatMap(([country, start]) => {
    try {
      return [numberOf(random, country, ['PREMIUM_RATE'], start, 4)];
    } catch {
      return [];
    }
  });
  if (bases.length < 3) throw new Error(`only ${bases.length} premium-rate ranges found`);
  return Array.from({ length: count }, (_, i) => ({
    at: startAt + Math.floor((i + random()) * ((2 * HOUR_MS) / count)),
    actor: 'premium rate' as const,
    phone: numberOf(random, 'GB', ['PREMIUM_RATE'], pick(random, bases), 4),
    source: 'signup-form',
    ip: randomIp(random),
  }));
}

/** One source (a compromised partner integration) asking for numbers of many countries, none verified, over 40 minutes. */
function manyCountries(random: () => number, count: number, startAt: number): Ask[] {
  const countries = LEGITIMATE_COUNTRIES.map(([country]) => country);
  let ip = randomIp(random);
  return Array.from({ length: count }, (_, i) => {
    if (i % 5 === 0) ip = randomIp(random);
    return { at: startAt + Math.floor((i + random()) * ((40 * 60_000) / count)), actor: 'many countries' as const, phone: numberOf(random, pick(random, countries)), source: 'partner-api', ip };
  });
}

/** The partner integration's own real traffic: a few sign-ups an hour, verified like the rest. */
function partnerTraffic(random: () => number, count: number, seen: Set<string>): Ask[] {
  return legitimate(random, count, seen).map((ask) => ({ ...ask, source: 'partner-api' }));
}

/** The day: every ask in time order. */
export function trafficDay(seed: number, legitimateCount: number): Ask[] {
  const random = seeded(seed);
  const seen = new Set<string>();
  const asks = [
    ...legitimate(random, legitimateCount, seen),
    ...partnerTraffic(random, Math.max(24, Math.round(legitimateCount / 200)), seen),
    ...fastBurst(random, 300, 3 * HOUR_MS),
    ...slowSpread(random, 300),
    ...premiumRate(random, 100, 9 * HOUR_MS),
    ...manyCountries(random, 200, 15 * HOUR_MS),
  ];
  return asks.sort((a, b) => a.at - b.at);
}
