import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUrl, Matches, MaxLength, ValidateBy, ValidationArguments } from 'class-validator';
import { PageQueryDto } from '../../common/page-query.dto';
import { SOURCE_MESSAGE, SOURCE_PATTERN } from '../../common/source';
import { FilterResultDto } from '../../provider/dto/filter-result.dto';

export const MAX_BULK_ENTRIES = 1000;
export const BULK_STATUSES = ['queued', 'processing', 'completed'] as const;
export type BulkStatus = (typeof BULK_STATUSES)[number];

/** 1 to 1,000 entries, each a string; the message names the first entry that is not (`phones[3] must be a string`). */
function IsPhoneList(): PropertyDecorator {
  return ValidateBy({
    name: 'isPhoneList',
    validator: {
      validate: (value: unknown) =>
        Array.isArray(value) && value.length >= 1 && value.length <= MAX_BULK_ENTRIES && value.every((entry) => typeof entry === 'string'),
      defaultMessage: ({ value }: ValidationArguments) => {
        if (!Array.isArray(value)) return `phones must be an array of 1 to ${MAX_BULK_ENTRIES} strings`;
        if (value.length < 1 || value.length > MAX_BULK_ENTRIES) {
          return `phones must have 1 to ${MAX_BULK_ENTRIES} entries (it has ${value.length})`;
        }
        return `phones[${value.findIndex((entry) => typeof entry !== 'string')}] must be a string`;
      },
    },
  });
}

export class BulkRequestDto {
  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_BULK_ENTRIES,
    example: ['+14155552671', '+44 7400 123456'],
    description:
      'The numbers, E.164 (spaces, "-", ".", "(" and ")" ignored). An entry that fails the syntax rule gets an ' +
      'INVALID_REQUEST error in the results and is not charged.',
  })
  @IsPhoneList()
  phones: string[];

  @ApiPropertyOptional({ example: 'crm-import', default: 'internal', description: 'Recorded on the ledger entries of the job.' })
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
}

export class BulkAcceptedDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: ['queued'], example: 'queued' }) status: 'queued';
  @ApiProperty({ example: 3, description: 'Entries in the job.' }) total: number;
  @ApiProperty({ example: 12, description: 'Credits reserved: cost per call × entries that pass the syntax rule.' }) cost: number;
}

export class BulkEntryErrorDto {
  @ApiProperty({ enum: ['INVALID_REQUEST', 'PROVIDER_UNAVAILABLE'], example: 'PROVIDER_UNAVAILABLE' }) code: 'INVALID_REQUEST' | 'PROVIDER_UNAVAILABLE';
  @ApiProperty({ example: 'The lookup network is unavailable right now. The credits for this entry are refunded.' }) message: string;
}

export class BulkEntryDto {
  @ApiProperty({ example: '+14155552671', description: 'The normalised number; for a syntax error, the entry as sent (at most 64 characters).' })
  phone: string;

  @ApiPropertyOptional({ type: FilterResultDto, description: 'The six fields, as POST /api/v1/filter answers them.' })
  result?: FilterResultDto;

  @ApiPropertyOptional({ type: BulkEntryErrorDto, description: 'INVALID_REQUEST (not charged) or PROVIDER_UNAVAILABLE (refunded).' })
  error?: BulkEntryErrorDto;
}

export class BulkJobSummaryDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: BULK_STATUSES, example: 'processing' }) status: BulkStatus;
  @ApiProperty({ example: 3 }) total: number;
  @ApiProperty({ example: 2, description: 'Entries with their final answer (syntax errors count from the start).' }) processed: number;
  @ApiProperty({ example: 12, description: 'Credits reserved at submission.' }) cost: number;
  @ApiProperty({ example: '2026-11-22T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: null, nullable: true, type: String }) completed_at: string | null;
}

export class BulkJobDto {
  @ApiProperty({ example: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10' }) id: string;
  @ApiProperty({ enum: BULK_STATUSES, example: 'completed' }) status: BulkStatus;
  @ApiProperty({ example: 3 }) total: number;
  @ApiProperty({ example: 3 }) processed: number;
  @ApiProperty({ example: '2026-11-22T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: '2026-11-22T10:00:02.000Z', nullable: true, type: String }) completed_at: string | null;

  @ApiProperty({
    type: [BulkEntryDto],
    example: [
      { phone: '+447400123456', result: { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', line_type: 'MOBILE', is_ported: false } },
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
    example: [{ id: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10', status: 'completed', total: 3, processed: 3, cost: 8, created_at: '2026-11-22T10:00:00.000Z', completed_at: '2026-11-22T10:00:02.000Z' }],
  })
  jobs: BulkJobSummaryDto[];
  @ApiProperty({ nullable: true, type: String, example: 'Ymo6NDI', description: 'Pass as cursor to get the next (older) page; null on the last page.' })
  next_cursor: string | null;
}

export class BulkListQueryDto extends PageQueryDto({ defaultLimit: 20, maxLimit: 100, cursorMaxLength: 100 }) {}
