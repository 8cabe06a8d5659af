import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { HashKey, keyedHash } from './keyed-hash';
import { isE164 } from './phone';

/**
 * The keyed hashes an erasure finds a number's stored forms by (docs/privacy.md, "Erasure"). Every
 * store that keeps a form of a number as sent keeps beside it the hash of its one reading, in an indexed
 * column written with the row; an erasure asks each store for `erasureHashes` of the number (every
 * reading a form of that number can have): one index lookup per store, whatever the form.
 *
 * How a stored form is read (its separators, `(0)` after a country code and full-width digits aside):
 * - with `+` or `00` first, it is international: the hash of its E.164 form, as the lookup cache keys it
 *   (`+44 7400 170005`, `0044…`, `+44 (0) 7400 170005`, `tel:0044…`);
 * - digits without them are a national number (the service never reads digits without `+` as
 *   international): the hash of those digits without leading zeros, `national:<digits>`. A national
 *   form does not say its country, so an erasure of any number those digits can stand for finds it:
 *   its national significant number (`07400 170005`, `612 345 678`, `(415) 555-2671`), the same after
 *   its country's trunk prefix (`8 912 345-67-89`, `1 415 555 2671`), or after its country code
 *   (`447400170005`, `call 447400170005`): erring towards erasing;
 * - anything else (no number's digits in it): no hash, nothing an erasure could be asked for.
 */
export function storedFormHash(key: HashKey, raw: string): string | null {
  const text = raw.normalize('NFKC');
  const compact = text.replace(/\(0\)/g, '').replace(/[\s\-.()\u00a0]/g, '');
  // `+` or `00` first (after anything that is not a digit, as `tel:`): international.
  const start = compact.search(/[+\d]/);
  if (start < 0) return null;
  const body = compact.slice(start);
  const international = body.startsWith('+') ? body.slice(1).replace(/\D/g, '') : /^00/.test(body) ? body.replace(/\D/g, '').slice(2) : undefined;
  if (international !== undefined) return isE164(`+${international}`) ? keyedHash(key, e164Reading(`+${international}`)) : null;
  const digits = body.replace(/\D/g, '').replace(/^0+/, '');
  return digits.length >= MIN_NATIONAL_DIGITS && digits.length <= 17 ? keyedHash(key, `${NATIONAL}${digits}`) : null;
}

/**
 * An international form's E.164 number: as written, or without the trunk 0 written after its country
 * code (`+44 (0) 7400 170005`, stored compact as `+4407400170005`) when only that reading is a valid number.
 */
function e164Reading(written: string): string {
  // Parsed only when a 0 follows a possible country code (a parse costs ~40 µs: a bulk job's forms are many).
  if (!/^\+\d{1,3}0/.test(written)) return written;
  const parsed = parsePhoneNumberFromString(written);
  return parsed?.isValid() && parsed.number !== written && !isValidNumber(written) ? parsed.number : written;
}

function isValidNumber(e164: string): boolean {
  const parsed = parsePhoneNumberFromString(e164);
  return parsed !== undefined && parsed.number === e164 && parsed.isValid();
}

/** Every hash `storedFormHash` gives a form of this number (`e164`: normalised): its own and its national readings'. */
export function erasureHashes(key: HashKey, e164: string): string[] {
  const parsed = parsePhoneNumberFromString(e164);
  const readings = new Set<string>([e164.slice(1)]);
  const nationalNumber = parsed?.nationalNumber;
  if (nationalNumber) {
    readings.add(nationalNumber);
    readings.add(`${parsed.countryCallingCode}${nationalNumber}`);
    // As the country writes it nationally, its trunk prefix included (`8 (912) 345-67-89`, `07400 170005`).
    readings.add(parsed.formatNational().replace(/\D/g, ''));
  }
  const national = [...readings].map((digits) => digits.replace(/^0+/, '')).filter((digits) => digits.length >= MIN_NATIONAL_DIGITS);
  return [keyedHash(key, e164), ...new Set(national.map((digits) => keyedHash(key, `${NATIONAL}${digits}`)))];
}

const NATIONAL = 'national:';
/** Shorter runs of digits are not taken for a number. */
const MIN_NATIONAL_DIGITS = 4;
