import type { CheckAnswer } from './check-definition';
// A type only: its class, with the OpenAPI decorators, is not loaded by what stores or shows provenance (the admin CLI).
import type { CheckProvenanceDto } from './provenance.dto';

/**
 * Where each check's answer came from (issue 23, provenance): the provider id that answered it and when
 * it observed the number (a cached answer keeps both). Stored compact, as the ledger, bulk entries and
 * watchlist entries keep it: `{ "<check>": ["<provider>", "<observedAt ISO 8601>"] }` in a `json` column
 * (kept as written: 62 bytes on a ledger row for one check answered by `hlr-lookups`, 117 for two, 177 for
 * three; jsonb would take 76 for one); shown expanded (`{ "<check>": { "provider", "observed_at" } }`) by the API.
 */
export type StoredProvenance = Record<string, [provider: string, observedAt: string]>;

/** Each check's origin as the API shows it, by check name. */
export type AnsweredBy = Record<string, CheckProvenanceDto>;

/** The OpenAPI schema of an `answered_by` map (its keys are check names). */
export function answeredBySchema(description: string) {
  return {
    type: 'object' as const,
    nullable: true,
    additionalProperties: {
      type: 'object',
      required: ['provider', 'observed_at'],
      properties: {
        provider: { type: 'string', example: 'hlr-lookups' },
        observed_at: { type: 'string', format: 'date-time', example: '2026-11-22T10:00:01.000Z' },
      },
    },
    example: { network_status: { provider: 'hlr-lookups', observed_at: '2026-11-22T10:00:01.000Z' } },
    description,
  };
}

/** The compact record of a report's answers; null when no check was asked (a number invalid for its plan). */
export function provenanceOf(answers: Readonly<Record<string, CheckAnswer>>): StoredProvenance | null {
  const checks = Object.keys(answers);
  if (checks.length === 0) return null;
  return Object.fromEntries(checks.map((check) => [check, [answers[check].provider, answers[check].observedAt]]));
}

/** The stored record as the API shows it; null stays null. */
export function showProvenance(stored: StoredProvenance | null | undefined): AnsweredBy | null {
  if (!stored) return null;
  return Object.fromEntries(Object.entries(stored).map(([check, [provider, observedAt]]) => [check, { provider, observed_at: observedAt }]));
}

/** One stored pair (a watchlist change's origin) as the API shows it. */
export function showOrigin(pair: StoredProvenance[string] | null | undefined): CheckProvenanceDto | null {
  return pair ? { provider: pair[0], observed_at: pair[1] } : null;
}

/** A bulk CSV's provenance columns, after the existing ones: `<check>_provider`, `<check>_observed_at` per registered check. */
export function provenanceColumns(checks: readonly string[]): string[] {
  return checks.flatMap((check) => [`${check}_provider`, `${check}_observed_at`]);
}

/** The values of those columns for one entry (empty when the check did not answer it). */
export function provenanceCells(stored: StoredProvenance | null | undefined, checks: readonly string[]): Array<string | undefined> {
  return checks.flatMap((check) => [stored?.[check]?.[0], stored?.[check]?.[1]]);
}
