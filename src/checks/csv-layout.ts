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
  /** Submitted with `risk: true`: the risk verdict's columns (RISK_COLUMNS) come last. */
  readonly risk?: boolean;
}

/** The columns of a risk verdict in a bulk job's CSV: its score, level, recommendation and reason codes (strongest first, space-separated). */
export const RISK_COLUMNS = ['risk_score', 'risk_level', 'risk_recommendation', 'risk_reasons'] as const;

/** What a verdict's cells are made of (the risk verdict of src/risk, as stored with a bulk entry). */
export interface VerdictCells {
  score: number;
  level: string;
  recommendation: string;
  reasons: ReadonlyArray<{ code: string }>;
}

export function csvHeader(layout: CsvLayout): string[] {
  return ['phone', 'reference', ...layout.answer, 'error_code', 'error_message', ...provenanceColumns(layout.answeredBy), ...(layout.risk ? RISK_COLUMNS : [])];
}

/** One entry's cells under csvHeader(layout). */
export function csvCells(
  layout: CsvLayout,
  entry: {
    phone: string;
    reference: string | null;
    result: Readonly<Record<string, FieldValue>> | null;
    answeredBy: StoredProvenance | null;
    error: { code: string; message: string } | null;
    risk?: VerdictCells | null;
  },
): Array<FieldValue | undefined> {
  const verdict = entry.result ? entry.risk : null;
  return [
    entry.phone,
    entry.reference,
    ...layout.answer.map((column) => entry.result?.[column]),
    entry.error?.code,
    entry.error?.message,
    ...provenanceCells(entry.result ? entry.answeredBy : null, layout.answeredBy),
    ...(layout.risk ? [verdict?.score, verdict?.level, verdict?.recommendation, verdict?.reasons.map((reason) => reason.code).join(' ')] : []),
  ];
}
