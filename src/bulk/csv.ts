import { isE164 } from '../common/phone';

export type CsvValue = string | number | boolean | null | undefined;

const NEEDS_QUOTES = /[",\r\n]/;
/** What a spreadsheet may read as the start of a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One RFC 4180 cell. Text that a spreadsheet would evaluate (starting with = + - @, tab or CR) is
 * prefixed with an apostrophe, so the cell is shown as text and never run; then quoted when needed.
 * A normalised E.164 number starts with "+" but cannot carry a formula: left as is so it stays a phone number.
 */
export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text) && !isE164(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) || text !== text.trim() ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rows to CSV text, CRLF line ends (RFC 4180), the header row first. */
export function toCsv(header: readonly string[], rows: ReadonlyArray<readonly CsvValue[]>): string {
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\r\n') + '\r\n';
}
