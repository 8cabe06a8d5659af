import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsISO8601, IsOptional, IsString, IsUrl, MaxLength, ValidateBy, ValidationArguments, ValidateIf } from 'class-validator';
import { PageQueryDto } from '../../common/page-query.dto';
import { PhoneAnswerDto, type ReportedAnswer } from '../../checks/phone-answer.dto';
import { answeredBySchema, type AnsweredBy } from '../../checks/provenance';
import { CheckProvenanceDto } from '../../checks/provenance.dto';
import { WATCH_INTERVALS, type WatchedField, type WatchInterval } from '../watch-rules';
import { BUILT_IN_CHECKS } from '../../checks/built-in-checks';
import { CheckRegistry } from '../../checks/check-registry';

/** The fields the built-in checks watch, for the document (a registered check adds its own). */
const WATCHED_FIELDS = new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition }))).watchedFields();

export const MAX_WATCHLIST_ENTRIES = 10_000;
export const WATCHLIST_STATUSES = ['active', 'paused', 'paused_insufficient_credits', 'paused_spending_limit'] as const;
export type WatchlistStatus = (typeof WATCHLIST_STATUSES)[number];

const ID_EXAMPLE = '7d1f0a52-3c0e-4a8e-9f3b-2b6f3f0c9a11';
const ROUND_EXAMPLE = {
  round: 2,
  status: 'completed',
  trigger: 'manual',
  checked: 2,
  failed: 0,
  changes: 2,
  cost_per_number: 4,
  ledger_source: `watchlist-${ID_EXAMPLE}-round-2`,
  started_at: '2026-11-23T05:00:00.000Z',
  completed_at: '2026-11-23T05:00:01.000Z',
};
const SUMMARY_EXAMPLE = {
  id: ID_EXAMPLE,
  name: 'CRM contacts',
  status: 'active',
  interval: 'weekly',
  total: 2,
  callback_url: 'https://example.com/hooks/watchlist',
  next_check_at: '2026-11-30T05:00:00.000Z',
  last_round: ROUND_EXAMPLE,
  created_at: '2026-11-23T04:59:00.000Z',
};
const CHANGE_EXAMPLE = {
  phone: '+447400120005',
  reference: 'contact-2',
  field: 'status',
  before: 'CONNECTED',
  after: 'ABSENT',
  answered_by: { provider: 'hlr-lookups', observed_at: '2026-11-23T05:00:00.912Z' },
  round: 2,
  detected_at: '2026-11-23T05:00:01.000Z',
};
const CALLBACK_DESCRIPTION =
  'http(s) URL POSTed one signed `watchlist.changes` event per round that found changes (and `watchlist.paused` when a ' +
  'round is refused for credits or by the daily spending limit), signed like bulk callbacks (X-Signature, X-Signature-Timestamp). Public addresses only.';

/** An array of `min` to `max` strings; the message names the first entry that is not one. */
function IsStringList(field: string, min: number, max: number, maxLength: number): PropertyDecorator {
  return ValidateBy({
    name: 'isStringList',
    validator: {
      validate: (value: unknown) =>
        Array.isArray(value) && value.length >= min && value.length <= max && value.every((entry) => typeof entry === 'string' && entry.length <= maxLength),
      defaultMessage: ({ value }: ValidationArguments) => {
        if (!Array.isArray(value)) return `${field} must be an array of ${min} to ${max} strings`;
        if (value.length < min || value.length > max) return `${field} must have ${min} to ${max} entries (it has ${value.length})`;
        return `${field}[${value.findIndex((entry) => typeof entry !== 'string' || entry.length > maxLength)}] must be a string of at most ${maxLength} characters`;
      },
    },
  });
}

function CallbackUrl(): PropertyDecorator[] {
  return [
    IsString(),
    MaxLength(2048),
    IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'callback_url must be an http or https URL' }),
  ];
}
const applyAll = (decorators: PropertyDecorator[]): PropertyDecorator => (target, key) => decorators.forEach((d) => d(target, key));

export class CreateWatchlistDto {
  @ApiPropertyOptional({ example: 'CRM contacts', maxLength: 100 })
  @IsOptional() @IsString() @MaxLength(100)
  name?: string;

  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_WATCHLIST_ENTRIES,
    example: ['+447400123456', '+447400120005', 'not a number'],
    description: 'The numbers to watch, E.164 (separators ignored). An entry that fails the E.164 rule is reported in `rejected` and never watched; repeats are watched once.',
  })
  @IsStringList('phones', 1, MAX_WATCHLIST_ENTRIES, 64)
  phones: string[];

  @ApiProperty({ enum: WATCH_INTERVALS, example: 'weekly', description: 'How often every number is re-checked (the first round runs at once).' })
  @IsIn(WATCH_INTERVALS, { message: `interval must be one of ${WATCH_INTERVALS.join(', ')}` })
  interval: WatchInterval;

  @ApiPropertyOptional({ example: 'https://example.com/hooks/watchlist', nullable: true, type: String, description: `${CALLBACK_DESCRIPTION} null: no callback, as when absent.` })
  @IsOptional() @applyAll(CallbackUrl())
  callback_url?: string | null;

  @ApiPropertyOptional({
    type: [String],
    example: ['contact-1', 'contact-2', 'contact-3'],
    description: 'Your own reference for each number, in the order of `phones` (same length); returned with its entry and its changes.',
  })
  @IsOptional() @IsStringList('references', 1, MAX_WATCHLIST_ENTRIES, 100)
  references?: string[];
}

export class UpdateWatchlistDto {
  @ApiPropertyOptional({ example: 'CRM contacts (EU)', maxLength: 100 })
  @IsOptional() @IsString() @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({ enum: WATCH_INTERVALS, example: 'daily' })
  @IsOptional() @IsIn(WATCH_INTERVALS, { message: `interval must be one of ${WATCH_INTERVALS.join(', ')}` })
  interval?: WatchInterval;

  @ApiPropertyOptional({ example: 'https://example.com/hooks/watchlist', nullable: true, type: String, description: 'null removes it.' })
  @ValidateIf((_, value) => value !== null && value !== undefined) @applyAll(CallbackUrl())
  callback_url?: string | null;

  @ApiPropertyOptional({
    example: false,
    description:
      'true pauses the rounds; false resumes them (also after `paused_insufficient_credits`, once topped up, or `paused_spending_limit`, ' +
      'once the limit is raised: the refused round then runs at once). `paused_spending_limit` also resumes by itself at the next 00:00 UTC.',
  })
  @IsOptional() @IsBoolean()
  paused?: boolean;

  @ApiPropertyOptional({ type: [String], example: ['+447400120006'], description: 'Numbers to start watching (counted against the plan limit).' })
  @IsOptional() @IsStringList('add', 1, MAX_WATCHLIST_ENTRIES, 64)
  add?: string[];

  @ApiPropertyOptional({ type: [String], example: ['+447400123456'], description: 'Numbers to stop watching.' })
  @IsOptional() @IsStringList('remove', 1, MAX_WATCHLIST_ENTRIES, 64)
  remove?: string[];
}

export class RejectedEntryDto {
  @ApiProperty({ example: 2, description: 'Index in `phones`.' }) index: number;
  @ApiProperty({ example: 'not a number' }) phone: string;
  @ApiProperty({ example: 'INVALID_REQUEST' }) code: 'INVALID_REQUEST';
  @ApiProperty({ example: 'phone must be in E.164 format: "+" then 2 to 15 digits, the first not 0, e.g. +14155552671' }) message: string;
}

export class WatchlistCreatedDto {
  @ApiProperty({ example: ID_EXAMPLE }) id: string;
  @ApiProperty({ example: 'CRM contacts', nullable: true, type: String }) name: string | null;
  @ApiProperty({ example: 2, description: 'Numbers watched.' }) total: number;
  @ApiProperty({ enum: WATCH_INTERVALS, example: 'weekly' }) interval: WatchInterval;
  @ApiProperty({ example: '2026-11-23T05:00:00.000Z', description: 'The first round runs at once.' }) next_check_at: string;
  @ApiProperty({ example: 8, description: "Credits a round costs now: watched numbers × the account's cost per call." }) cost_per_round: number;
  @ApiProperty({
    type: [RejectedEntryDto],
    example: [{ index: 2, phone: 'not a number', code: 'INVALID_REQUEST', message: 'phone must be in E.164 format: "+" then 2 to 15 digits, the first not 0, e.g. +14155552671' }],
    description: 'Entries that failed the E.164 rule: not watched, never charged.',
  })
  rejected: RejectedEntryDto[];
}

export class WatchlistRoundDto {
  @ApiProperty({ example: 2 }) round: number;
  @ApiProperty({ enum: ['running', 'completed'], example: 'completed' }) status: 'running' | 'completed';
  @ApiProperty({ enum: ['schedule', 'manual'], example: 'manual' }) trigger: 'schedule' | 'manual';
  @ApiProperty({ example: 2, description: 'Numbers answered so far.' }) checked: number;
  @ApiProperty({ example: 0, description: 'Lookups that failed (PROVIDER_UNAVAILABLE): refunded, the last answer kept.' }) failed: number;
  @ApiProperty({ example: 1 }) changes: number;
  @ApiProperty({ example: 4, description: 'Credits each number costs in this round.' }) cost_per_number: number;
  @ApiProperty({ example: 'watchlist-7d1f0a52-3c0e-4a8e-9f3b-2b6f3f0c9a11-round-2', description: 'The `source` of its ledger rows in /usage.' })
  ledger_source: string;
  @ApiProperty({ example: '2026-11-23T05:00:00.000Z' }) started_at: string;
  @ApiProperty({ example: '2026-11-23T05:00:01.000Z', nullable: true, type: String }) completed_at: string | null;
}

export class WatchlistSummaryDto {
  @ApiProperty({ example: ID_EXAMPLE }) id: string;
  @ApiProperty({ example: 'CRM contacts', nullable: true, type: String }) name: string | null;
  @ApiProperty({
    enum: WATCHLIST_STATUSES,
    example: 'active',
    description:
      '`paused`: by you. `paused_insufficient_credits`: a round the balance could not cover (top up, then PATCH {"paused": false}). ' +
      '`paused_spending_limit`: a round your daily_credit_limit refused; it resumes by itself at the next 00:00 UTC, or at once by PATCH {"paused": false}.',
  })
  status: WatchlistStatus;
  @ApiProperty({ enum: WATCH_INTERVALS, example: 'weekly' }) interval: WatchInterval;
  @ApiProperty({ example: 2 }) total: number;
  @ApiProperty({ example: 'https://example.com/hooks/watchlist', nullable: true, type: String }) callback_url: string | null;
  @ApiProperty({ example: '2026-11-30T05:00:00.000Z' }) next_check_at: string;
  @ApiProperty({ type: WatchlistRoundDto, nullable: true, example: ROUND_EXAMPLE, description: 'The last round started, or null.' })
  last_round: WatchlistRoundDto | null;
  @ApiProperty({ example: '2026-11-23T05:00:00.000Z' }) created_at: string;
}

export class WatchlistPageDto {
  @ApiProperty({ type: [WatchlistSummaryDto], example: [SUMMARY_EXAMPLE] }) watchlists: WatchlistSummaryDto[];
  @ApiProperty({ nullable: true, type: String, example: null, description: 'Pass as cursor for the next (older) page; null on the last page.' })
  next_cursor: string | null;
}

export class WatchlistEntryDto {
  @ApiProperty({ example: '+447400120005' }) phone: string;
  @ApiProperty({ example: 'contact-2', nullable: true, type: String }) reference: string | null;
  @ApiProperty({ type: PhoneAnswerDto, nullable: true, description: 'The last answer (null until the first round has checked it).' })
  result: ReportedAnswer | null;
  @ApiProperty(
    answeredBySchema(
      'Which provider answered each enabled check of `result` and when it observed the number, by check (with several providers, checks ' +
        'may come from different ones). null until the first answer, for a number invalid for its plan (no provider was asked), and for answers kept before this field existed.',
    ),
  )
  answered_by: AnsweredBy | null;
  @ApiProperty({ example: null, nullable: true, type: String, description: 'PROVIDER_UNAVAILABLE when the last lookup failed (refunded; `result` is the one before).' })
  error: string | null;
  @ApiProperty({ example: '2026-11-23T05:00:01.000Z', nullable: true, type: String }) checked_at: string | null;
}

export class WatchlistDto extends WatchlistSummaryDto {
  @ApiProperty({
    type: [WatchlistEntryDto],
    example: [{ phone: '+447400120005', reference: 'contact-2', result: { country: 'GB', valid: false, status: 'ABSENT', carrier: 'Three', line_type: 'UNKNOWN', is_ported: false }, answered_by: { network_status: { provider: 'hlr-lookups', observed_at: '2026-11-23T05:00:00.912Z' } }, error: null, checked_at: '2026-11-23T05:00:01.000Z' }],
    description: 'The watched numbers, newest first, one page (limit, cursor).',
  })
  entries: WatchlistEntryDto[];
  @ApiProperty({ nullable: true, type: String, example: null, description: 'cursor of the next page of entries; null on the last page.' })
  next_cursor: string | null;
}

export class RoundStartedDto {
  @ApiProperty({ example: ID_EXAMPLE }) id: string;
  @ApiProperty({ example: 2 }) round: number;
  @ApiProperty({ enum: ['running'], example: 'running', description: 'A round already running is answered as it is, not started twice.' }) status: 'running';
  @ApiProperty({ example: 8, description: 'Credits the round costs (numbers × cost per call), refunds for failed lookups aside.' }) cost: number;
}

export class WatchlistChangeDto {
  @ApiProperty({ example: '+447400120005' }) phone: string;
  @ApiProperty({ example: 'contact-2', nullable: true, type: String }) reference: string | null;
  @ApiProperty({ enum: WATCHED_FIELDS, example: 'status' }) field: WatchedField;
  @ApiProperty({ example: 'CONNECTED', anyOf: [{ type: 'string', nullable: true }, { type: 'number', nullable: true }, { type: 'boolean', nullable: true }] })
  before: string | number | boolean | null;
  @ApiProperty({ example: 'ABSENT', anyOf: [{ type: 'string', nullable: true }, { type: 'number', nullable: true }, { type: 'boolean', nullable: true }] })
  after: string | number | boolean | null;
  @ApiProperty({
    type: CheckProvenanceDto,
    nullable: true,
    description: 'The origin of `after`: the provider that answered the check producing this field in that round, and when. null for changes found before this field existed.',
  })
  answered_by: CheckProvenanceDto | null;
  @ApiProperty({ example: 2 }) round: number;
  @ApiProperty({ example: '2026-11-23T05:00:01.000Z' }) detected_at: string;
}

export class WatchlistChangePageDto {
  @ApiProperty({ type: [WatchlistChangeDto], example: [CHANGE_EXAMPLE] }) changes: WatchlistChangeDto[];
  @ApiProperty({ nullable: true, type: String, example: null, description: 'Pass as cursor for the next (older) page; null on the last page.' })
  next_cursor: string | null;
}

export class WatchlistDeletedDto {
  @ApiProperty({ example: ID_EXAMPLE }) id: string;
  @ApiProperty({ enum: ['deleted'], example: 'deleted' }) status: 'deleted';
}

export class WatchlistListQueryDto extends PageQueryDto({ defaultLimit: 20, maxLimit: 100, cursorMaxLength: 100 }) {}
export class WatchlistEntriesQueryDto extends PageQueryDto({ defaultLimit: 100, maxLimit: 1000, cursorMaxLength: 100 }) {}

export class WatchlistChangesQueryDto extends PageQueryDto({ defaultLimit: 100, maxLimit: 1000, cursorMaxLength: 100 }) {
  @ApiPropertyOptional({ example: '2026-11-23T00:00:00Z', description: 'Only changes detected at or after this time (ISO 8601).' })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'since must be an ISO 8601 date-time, e.g. 2026-11-23T00:00:00Z' })
  since?: string;
}
