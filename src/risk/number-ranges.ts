/**
 * The ranges a number belongs to, at the granularities the risk counters use (docs/sms-pumping.md).
 * Pumping attacks own or rent blocks of consecutive numbers from an operator and walk through them, so
 * they show as many distinct numbers in one range; a legitimate sign-up's number is one in millions.
 */
export interface NumberRanges {
  /** The 10,000-number range: the number without its last four digits (as the ledger masks it). */
  range: string;
  /** The 100-number block: without its last two digits. */
  block: string;
  /** The block of ten: without its last digit; with the blocks of ten before and after it (near-consecutive numbers). */
  ten: string;
  tenBefore: string | null;
  tenAfter: string | null;
}

/** At least the country code's first digit stays in every range, whatever the number's length. */
function cut(e164: string, digits: number): string {
  return e164.slice(0, Math.max(2, e164.length - digits));
}

/** The block of ten next to `ten` (+1 or -1), of the same length; null past the ends (…9 + 1, …0 - 1). */
function neighbour(ten: string, step: 1 | -1): string | null {
  const digits = ten.slice(1);
  const next = BigInt(digits) + BigInt(step);
  const text = next.toString();
  if (next < 0n || text.length !== digits.length || text[0] === '0') return null;
  return `+${text}`;
}

/** `e164`: a normalised number ("+" and 2 to 15 digits). */
export function rangesOf(e164: string): NumberRanges {
  const ten = cut(e164, 1);
  return { range: cut(e164, 4), block: cut(e164, 2), ten, tenBefore: neighbour(ten, -1), tenAfter: neighbour(ten, 1) };
}
