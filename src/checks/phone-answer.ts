export const CONNECTION_STATUSES = ['CONNECTED', 'ABSENT', 'UNDETERMINED'] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

/** libphonenumber's number types: the values of the answer's line type. */
export const LINE_TYPES = [
  'MOBILE',
  'FIXED_LINE',
  'FIXED_LINE_OR_MOBILE',
  'TOLL_FREE',
  'PREMIUM_RATE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
  'UNKNOWN',
] as const;
export type LineType = (typeof LINE_TYPES)[number];

/**
 * The answer about one phone number: the six fields of POST /api/v1/filter (docs/api.md), a projection
 * of the checks' full records (CheckRegistry.toPhoneAnswer). Bulk results and watchlist answers carry
 * these six plus the fields that enabled checks report. PhoneAnswer (phone-answer.dto.ts) describes it
 * to the OpenAPI document; this file holds the rules without Swagger, for what does not serve HTTP (the admin CLI).
 */
export interface PhoneAnswer {
  country: string | null;
  valid: boolean;
  status: ConnectionStatus;
  carrier: string | null;
  line_type: LineType;
  is_ported: boolean;
}

/** The fields of the six that checks fill (country and valid come from the numbering plan, free). */
export const SHOWN_FIELDS = ['status', 'carrier', 'line_type', 'is_ported'] as const;
export type ShownField = (typeof SHOWN_FIELDS)[number];

/** What a shown field says when no enabled check knows it. */
const NEUTRAL: Pick<PhoneAnswer, ShownField> = { status: 'UNDETERMINED', carrier: null, line_type: 'UNKNOWN', is_ported: false };

/**
 * The six fields from the numbering plan's facts and what the enabled checks filled. A number not
 * valid for its plan is ABSENT, whatever was asked; `valid` is false also when the network says ABSENT.
 */
export function phoneAnswerOf(region: string | null, validForPlan: boolean, filled: Partial<Record<ShownField, unknown>>): PhoneAnswer {
  if (!validForPlan) return { country: region, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false };
  const shown = { ...NEUTRAL, ...filled } as Pick<PhoneAnswer, ShownField>;
  return { country: region, valid: shown.status !== 'ABSENT', status: shown.status, carrier: shown.carrier, line_type: shown.line_type, is_ported: shown.is_ported };
}

/** The six fields and what enabled checks report beyond them: a bulk result, a watchlist answer. */
export type ReportedAnswer = PhoneAnswer & Readonly<Record<string, string | number | boolean | null>>;

/**
 * What checks' records already say of a number beyond the numbering plan: its network status, the
 * line type a provider answered, and a SIM swap (fields `sim_swapped`, `last_sim_swap_at` of a SIM-swap
 * check, when one is registered). The risk verdict reads them from the cache, whichever check holds them.
 */
export const FACT_FIELDS = ['status', 'line_type', 'sim_swapped', 'last_sim_swap_at'] as const;

export interface KnownFacts {
  status: ConnectionStatus | null;
  lineType: LineType | null;
  simSwapped: boolean | null;
  /** ISO 8601. */
  lastSimSwapAt: string | null;
}

/** The facts of some records (the first record that holds a valid value of each field). */
export function knownFacts(records: Iterable<{ readonly fields: Readonly<Record<string, unknown>> }>): KnownFacts {
  const facts: KnownFacts = { status: null, lineType: null, simSwapped: null, lastSimSwapAt: null };
  for (const { fields } of records) {
    const { status, line_type: lineType, sim_swapped: simSwapped, last_sim_swap_at: lastSimSwapAt } = fields;
    if (facts.status === null && CONNECTION_STATUSES.includes(status as ConnectionStatus)) facts.status = status as ConnectionStatus;
    if (facts.lineType === null && LINE_TYPES.includes(lineType as LineType) && lineType !== 'UNKNOWN') facts.lineType = lineType as LineType;
    if (facts.simSwapped === null && typeof simSwapped === 'boolean') facts.simSwapped = simSwapped;
    if (facts.lastSimSwapAt === null && typeof lastSimSwapAt === 'string' && !Number.isNaN(Date.parse(lastSimSwapAt))) facts.lastSimSwapAt = lastSimSwapAt;
  }
  return facts;
}
