/** One entry of a bulk job as sent: a bare number, or a number with the client's own reference. */
export interface BulkEntryInput {
  phone: string;
  reference?: string;
}

export const MAX_REFERENCE_LENGTH = 64;
/** 1 to 64 characters, none of Unicode's "other" category (control, format, surrogate, private use, unassigned). */
const REFERENCE_PATTERN = /^\P{C}{1,64}$/u;
export const REFERENCE_RULE = `1 to ${MAX_REFERENCE_LENGTH} printable characters`;

export function isReference(value: unknown): value is string {
  return typeof value === 'string' && REFERENCE_PATTERN.test(value);
}

/** Why an entry is not a string nor `{ phone, reference? }` (undefined when it is one). */
export function entryProblem(entry: unknown): string | undefined {
  if (typeof entry === 'string') return undefined;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return 'must be a string or an object { "phone", "reference" }';
  const unknown = Object.keys(entry).find((key) => key !== 'phone' && key !== 'reference');
  if (unknown !== undefined) return `has an unknown field "${unknown.slice(0, 32)}" (only phone and reference)`;
  const { phone, reference } = entry as Record<string, unknown>;
  if (typeof phone !== 'string') return '.phone must be a string';
  if (reference !== undefined && !isReference(reference)) return `.reference must be ${REFERENCE_RULE}`;
  return undefined;
}

export function toEntryInput(entry: string | BulkEntryInput): BulkEntryInput {
  return typeof entry === 'string' ? { phone: entry } : entry;
}
