import { normalizePhone } from '../common/phone';
import { BulkEntryInput, toEntryInput } from './entry-input';

/** Longest input kept for an entry that fails the syntax rule (it is echoed back, never looked up). */
export const MAX_STORED_INPUT = 64;

export interface PlannedEntry {
  index: number;
  /** The normalised E.164 number, or (syntax error) the input as sent, cleaned and cut to MAX_STORED_INPUT. */
  phone: string;
  valid: boolean;
  /** The queue job that looks it up; null for a syntax error (answered at submission). */
  chunk: number | null;
  /** The client's reference, when sent. */
  reference?: string;
}

export interface JobPlan {
  entries: PlannedEntry[];
  /** Entries that pass the syntax rule: each one is charged. */
  validCount: number;
  /** Distinct valid numbers: each one is looked up once. */
  distinctCount: number;
  /** Queue jobs; at least one, so even a job with nothing to look up completes through the queue. */
  chunks: number;
}

/**
 * Splits a job into queue chunks of at most `chunkSize` DISTINCT numbers. Every entry with the same
 * number lands in the same chunk, so a duplicate is looked up once and answered per entry.
 */
export function planJob(inputs: ReadonlyArray<string | BulkEntryInput>, chunkSize: number): JobPlan {
  const chunkOf = new Map<string, number>();
  const entries = inputs.map((input, index): PlannedEntry => {
    const { phone: raw, reference } = toEntryInput(input);
    const echo = reference === undefined ? {} : { reference };
    const e164 = normalizePhone(raw);
    if (!e164) return { index, phone: storableInput(raw), valid: false, chunk: null, ...echo };
    let chunk = chunkOf.get(e164);
    if (chunk === undefined) {
      chunk = Math.floor(chunkOf.size / chunkSize);
      chunkOf.set(e164, chunk);
    }
    return { index, phone: e164, valid: true, chunk, ...echo };
  });
  return {
    entries,
    validCount: entries.filter((entry) => entry.valid).length,
    distinctCount: chunkOf.size,
    chunks: Math.max(1, Math.ceil(chunkOf.size / chunkSize)),
  };
}

/** Postgres text cannot hold NUL, and a lone surrogate is not UTF-8: both become U+FFFD. */
function storableInput(raw: string): string {
  return wellFormed(wellFormed(raw.replace(/\0/g, '\uFFFD')).slice(0, MAX_STORED_INPUT));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}
