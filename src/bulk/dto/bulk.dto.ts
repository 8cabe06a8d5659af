import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsOptional, IsString, IsUrl, Matches, Max, MaxLength, Min, ValidateBy, ValidationArguments } from 'class-validator';
import { MAX_AGE_CEILING } from '../../common/cache-control';
import { PageQueryDto } from '../../common/page-query.dto';
import { SOURCE_MESSAGE, SOURCE_PATTERN } from '../../common/source';
import { PhoneAnswerDto, type ReportedAnswer } from '../../checks/phone-answer.dto';
import { answeredBySchema, type AnsweredBy } from '../../checks/provenance';
import { RiskVerdictDto } from '../../risk/dto/risk.dto';
import { BulkEntryInput, entryProblem, MAX_REFERENCE_LENGTH, REFERENCE_RULE } from '../entry-input';

export const MAX_BULK_ENTRIES = 1000;
export const BULK_STATUSES = ['queued', 'processing', 'completed'] as const;
export type BulkStatus = (typeof BULK_STATUSES)[number];

/**
 * 1 to 1,000 entries, each a string or `{ phone, reference? }`; the message names the first entry
 * that is not (`phones[3].reference must be 1 to 64 printable characters`).
 */
function IsEntryList(): PropertyDecorator {
  return ValidateBy({
    name: 'isEntryList',
    validator: {
      validate: (value: unknown) =>
        Array.isArray(value) && value.length >= 1 && value.length <= MAX_BULK_ENTRIES && value.every((entry) => entryProblem(entry) === undefined),
      defaultMessage: ({ value }: ValidationArguments) => {
        if (!Array.isArray(value)) return `phones must be an array of 1 to ${MAX_BULK_ENTRIES} entries`;
        if (value.length < 1 || value.length > MAX_BULK_ENTRIES) {
          return `phones must have 1 to ${MAX_BULK_ENTRIES} entries (it has ${value.length})`;
        }
        const index = value.findIndex((entry) => entryProblem(entry) !== undefined);
        const problem = entryProblem(value[index])!;
        return `phones[${index}]${problem.startsWith('.') ? '' : ' '}${problem}`;
      },
    },
  });
}

export class BulkEntryInputDto implements BulkEntryInput {
  @ApiProperty({ example: '+14155552671' }) phone: string;
  @ApiPropertyOptional({ example: 'crm-contact-1842', minLength: 1, maxLength: MAX_REFERENCE_LENGTH, description: `Yours, echoed in the results and the CSV: ${REFERENCE_RULE}.` })
  reference?: string;
}

export class BulkRequestDto {
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ type: 'string' }, { $ref: getSchemaPath(BulkEntryInputDto) }] },
    minItems: 1,
    maxItems: MAX_BULK_ENTRIES,
    example: ['+14155552671', { phone: '+44 7400 123456', reference: 'crm-contact-1842' }],
    description:
      'The numbers, E.164 (spaces, "-", ".", "(" and ")" ignored), each a string or `{ "phone", "reference" }`. An entry ' +
      'that fails the syntax rule gets an INVALID_REQUEST error in the results and is not charged.',
  })
  @IsEntryList()
  phones: Array<string | BulkEntryInput>;

  @ApiPropertyOptional({ example: 'crm-import', description: 'Recorded on the ledger entries of the job. Default: `internal`.' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: SOURCE_MESSAGE })
  source?: string;

  @ApiPropertyOptional({
    example: 'https://example.com/hooks/phone-filter',
    description:
      'http(s) URL POSTed `{ id, status, total }` when the job completes, signed (X-Signature, X-Signature-Timestamp). ' +
      'Must be a global unicast address (or a name that resolves to one at delivery): loopback, private, link-local, ' +
      'reserved and multicast addresses, their IPv6 spellings (IPv4-mapped, NAT64, 6to4, Teredo), IPv6 zone ids and ' +
      '`localhost` are refused with 400.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'callback_url must be an http or https URL' })
  callback_url?: string;

  @ApiPropertyOptional({
    example: 0,
    minimum: 0,
    description:
      'Freshness, like `Cache-Control: max-age` on /filter: 0 looks every number up live, N uses no cached answer older ' +
      'than N seconds; absent, any cached answer. Same price either way.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_AGE_CEILING)
  max_age?: number;

  @ApiPropertyOptional({
    example: true,
    description:
      'Also give each entry the risk verdict of POST /api/v1/risk (`risk`: score, level, recommendation, reasons), for a list ' +
      'you are about to text. Each billable entry then costs the risk verdict\'s price (default {{checks.risk_verdict_price}}) ' +
      'on top of cost_per_call, reserved with the rest; the CSV gains the columns risk_score, risk_level, risk_recommendation ' +
      'and risk_reasons. The verdicts read the live counters without feeding them, and count runs of near-consecutive ' +
      'numbers within the list (docs/sms-pumping.md "Bulk jobs"). Default: false.',
  })
  @IsOptional()
  @IsBoolean({ message: 'risk must be true or false' })
  risk?: boolean;
}

export class BulkQuoteDto {
  @ApiProperty({ example: 3, description: 'Entries in the body.' }) total: number;
  @ApiProperty({ example: 2, description: 'Entries that pass the E.164 syntax rule: each one is charged.' }) billable: number;
  @ApiProperty({ example: 1, description: 'Entries that fail it: answered INVALID_REQUEST, never charged.' }) invalid: number;
  @ApiProperty({ example: 8, description: 'Credits the job would reserve: billable × cost_per_call (plus the risk verdict\'s price with `risk: true`).' }) cost: number;
  @ApiProperty({ example: 9996 }) balance: number;
  @ApiProperty({ example: true, description: 'Whether the balance (and the daily spending limit, when set) covers the cost now.' }) sufficient: boolean;
}

export class BulkEntriesDeletedDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ example: 1000, description: 'Entries deleted now (0 when they were already gone). The job, its counts and its charges stay.' })
  deleted_entries: number;
}

export class BulkAcceptedDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: BULK_STATUSES, example: 'queued', description: '`queued` for a new job; a replay (same Idempotency-Key and body) shows the job\'s status now.' })
  status: BulkStatus;
  @ApiProperty({ example: 3, description: 'Entries in the job.' }) total: number;
  @ApiProperty({ example: 12, description: 'Credits reserved: cost per entry (cost_per_call, plus the risk verdict\'s price with `risk: true`) × entries that pass the syntax rule.' }) cost: number;
}

export const BULK_ENTRY_ERRORS = ['INVALID_REQUEST', 'PROVIDER_UNAVAILABLE', 'SERVICE_UNAVAILABLE'] as const;
export type BulkEntryErrorCode = (typeof BULK_ENTRY_ERRORS)[number];

export class BulkEntryErrorDto {
  @ApiProperty({
    enum: BULK_ENTRY_ERRORS,
    example: 'PROVIDER_UNAVAILABLE',
    description: 'SERVICE_UNAVAILABLE only in a job with `risk: true`: the risk counters could not be reached, so no verdict was made (refunded).',
  })
  code: BulkEntryErrorCode;
  @ApiProperty({ example: 'The lookup network is unavailable right now. The credits for this entry are refunded.' }) message: string;
}

export class BulkEntryDto {
  @ApiProperty({ example: '+14155552671', description: 'The normalised number; for a syntax error, the entry as sent (at most 64 characters).' })
  phone: string;

  @ApiPropertyOptional({ example: 'crm-contact-1842', description: 'The entry\'s reference, when it was sent with one.' })
  reference?: string;

  @ApiPropertyOptional({ type: PhoneAnswerDto, description: 'The six fields, as POST /api/v1/filter answers them.' })
  result?: ReportedAnswer;

  @ApiPropertyOptional(
    answeredBySchema(
      'With `result`: which provider answered each enabled check and when it observed the number, by check (a cached answer keeps ' +
        'its original provider and time; with several providers, checks of one number may come from different ones). null for a number ' +
        'invalid for its plan (no provider was asked) and for entries answered before this field existed. Not in POST /api/v1/filter\'s answer.',
    ),
  )
  answered_by?: AnsweredBy | null;

  @ApiPropertyOptional({
    type: RiskVerdictDto,
    description:
      'With `result`, in a job submitted with `risk: true`: the risk verdict of POST /api/v1/risk for the number (event `other`), ' +
      'from the job\'s own answers, what the service already knows and the runs within the list.',
  })
  risk?: RiskVerdictDto;

  @ApiPropertyOptional({ type: BulkEntryErrorDto, description: 'INVALID_REQUEST (not charged), PROVIDER_UNAVAILABLE or SERVICE_UNAVAILABLE (refunded).' })
  error?: BulkEntryErrorDto;
}

export class BulkJobSummaryDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: BULK_STATUSES, example: 'processing' }) status: BulkStatus;
  @ApiProperty({ example: 3 }) total: number;
  @ApiProperty({ example: 2, description: 'Entries with their final answer (syntax errors count from the start).' }) processed: number;
  @ApiProperty({ example: 12, description: 'Credits reserved at submission.' }) cost: number;
  @ApiProperty({ example: 12, description: 'Credits charged for the job (its reservation).' }) charged: number;
  @ApiProperty({ example: 0, description: 'Credits refunded so far (failed lookups, once the job completes).' }) refunded: number;
  @ApiProperty({ example: '2026-11-22T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: null, nullable: true, type: String }) completed_at: string | null;
}

export class BulkJobDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: BULK_STATUSES, example: 'completed' }) status: BulkStatus;
  @ApiProperty({ example: 3 }) total: number;
  @ApiProperty({ example: 3 }) processed: number;
  @ApiProperty({ example: 8, description: 'Credits reserved at submission.' }) cost: number;
  @ApiProperty({ example: 8, description: 'Credits charged for the job (its reservation).' }) charged: number;
  @ApiProperty({ example: 4, description: 'Credits refunded so far (failed lookups, once the job completes).' }) refunded: number;
  @ApiProperty({ example: '2026-11-22T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: '2026-11-22T10:00:02.000Z', nullable: true, type: String }) completed_at: string | null;

  @ApiProperty({
    type: [BulkEntryDto],
    example: [
      {
        phone: '+447400123456',
        reference: 'crm-contact-1842',
        result: { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', line_type: 'MOBILE', is_ported: false },
        answered_by: { network_status: { provider: 'hlr-lookups', observed_at: '2026-11-22T10:00:01.000Z' } },
      },
      { phone: '12345', error: { code: 'INVALID_REQUEST', message: 'phone must be in E.164 format, e.g. +14155552671.' } },
      { phone: '+447400120003', error: { code: 'PROVIDER_UNAVAILABLE', message: 'The lookup network is unavailable right now. The credits for this entry are refunded.' } },
    ],
    description:
      'In input order. While the job is queued or processing, only the entries answered so far (still in input order); ' +
      'once completed, every entry.',
  })
  results: BulkEntryDto[];
}

export class BulkJobPageDto {
  @ApiProperty({
    type: [BulkJobSummaryDto],
    example: [{ id: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10', status: 'completed', total: 3, processed: 3, cost: 8, charged: 8, refunded: 4, created_at: '2026-11-22T10:00:00.000Z', completed_at: '2026-11-22T10:00:02.000Z' }],
  })
  jobs: BulkJobSummaryDto[];
  @ApiProperty({ nullable: true, type: String, example: 'Ymo6NDI', description: 'Pass as cursor to get the next (older) page; null on the last page.' })
  next_cursor: string | null;
}

export class BulkListQueryDto extends PageQueryDto({ defaultLimit: 20, maxLimit: 100, cursorMaxLength: 100 }) {}
