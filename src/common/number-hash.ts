import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { HashKey, keyedHash } from './keyed-hash';
import { isE164, normalizePhone } from './phone';

/**
 * The keyed hashes an erasure finds a number's stored forms by (docs/privacy.md, "Erasure"). Every
 * store that keeps a form of a number as sent keeps beside it the hash of what that form can stand for,
 * in an indexed column written with the row; an erasure asks each store for `erasureHashes` of the
 * number: one index lookup per store, whatever the form.
 *
 * - a form that is a number (E.164, with separators, full-width digits, `00` instead of `+`): the hash
 *   of its E.164 form, as the lookup cache keys it;
 * - a national form (a leading 0, no country code, e.g. `07400 170005`): the hash of its national
 *   significant number without leading zeros, which an erasure of any country's number with that
 *   national number finds (a national form does not say its country: erring towards erasing it);
 * - digits without their `+` (`447400654501`, `call 447400654501`): the hash of `+` and those digits;
 * - anything else (no number's digits in it): no hash, nothing an erasure could be asked for.
 */
export function storedFormHash(key: HashKey, raw: string): string | null {
  const compact = raw.normalize('NFKC').replace(/[\s\-.()\u00a0]/g, '');
  const international = normalizePhone(compact);
  if (international) return keyedHash(key, international);
  // Its digits, whatever surrounds them (`call 447400654501`, `tel:0044…`), as the erasure once matched them.
  const digits = compact.replace(/\D/g, '');
  if (/^00[1-9]/.test(digits) && isE164(`+${digits.slice(2)}`)) return keyedHash(key, `+${digits.slice(2)}`);
  const national = /^0+([1-9]\d{3,16})$/.exec(digits)?.[1];
  if (national) return keyedHash(key, `${NATIONAL}${national}`);
  // Digits without their `+` (a country code first); shorter runs are not taken for a number.
  if (digits.length >= 8 && isE164(`+${digits}`)) return keyedHash(key, `+${digits}`);
  return null;
}

/** The hashes `storedFormHash` gives the forms of this number (`e164`: normalised): its own and its national form's. */
export function erasureHashes(key: HashKey, e164: string): string[] {
  const nationalNumber = parsePhoneNumberFromString(e164)?.nationalNumber.replace(/^0+/, '');
  return [keyedHash(key, e164), ...(nationalNumber ? [keyedHash(key, `${NATIONAL}${nationalNumber}`)] : [])];
}

const NATIONAL = 'national:';
