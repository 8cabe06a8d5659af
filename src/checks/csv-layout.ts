import type { FieldValue } from './check-definition';
import { provenanceCells, provenanceColumns, type StoredProvenance } from './provenance';

/**
 * The columns of a bulk job's CSV, fixed when the job is submitted (stored on the job, so that adding
 * or changing a check later changes no job's CSV and no account's that does not turn the check on):
 * `phone`, `reference`, the `answer` columns, `error_code`, `error_message`, then per check of the job
 * `<check>_provider` and `<check>_observed_at` (which provider answered it, and when).
 */
export interface CsvLayout {
  /** The answer's six fields (as in the JSON results), then the columns the job's checks add beyond them. */
  readonly answer: readonly string[];
  /** The job's checks (its account's enabled ones at submission), in registration order: the provenance columns. */
  readonly answeredBy: readonly string[];
}

export function csvHeader(layout: CsvLayout): string[] {
  return ['phone', 'reference', ...layout.answer, 'error_code', 'error_message', ...provenanceColumns(layout.answeredBy)];
}

/** One entry's cells under csvHeader(layout). */
export function csvCells(
  layout: CsvLayout,
  entry: { phone: string; reference: string | null; result: Readonly<Record<string, FieldValue>> | null; answeredBy: StoredProvenance | null; error: { code: string; message: string } | null },
): Array<FieldValue | undefined> {
  return [
    entry.phone,
    entry.reference,
    ...layout.answer.map((column) => entry.result?.[column]),
    entry.error?.code,
    entry.error?.message,
    ...provenanceCells(entry.result ? entry.answeredBy : null, layout.answeredBy),
  ];
}
