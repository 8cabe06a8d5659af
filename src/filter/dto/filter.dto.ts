import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { E164_MESSAGE, normalizePhone } from '../../common/phone';
import { LINE_TYPES } from '../../provider/lookup.types';
import type { ConnectionStatus, LineType } from '../../provider/lookup.types';

const E164 = /^\+[1-9]\d{1,14}$/;
export const SOURCE_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const SOURCE_MESSAGE = 'source must be 1 to 64 letters, digits, "_", "-" or "."';

/** Separators (spaces, -, ., parentheses) are dropped before the E.164 rule is checked. */
export const NormalizePhone = () => Transform(({ value }) => (typeof value === 'string' ? (normalizePhone(value) ?? value) : value));

export class FilterRequestDto {
  @ApiProperty({ example: '+14155552671', description: 'E.164; spaces, "-", ".", "(" and ")" are ignored.' })
  @IsDefined({ message: 'phone is required' })
  @IsString()
  @MaxLength(64)
  @NormalizePhone()
  @Matches(E164, { message: E164_MESSAGE })
  phone: string;

  @ApiPropertyOptional({ example: 'website', default: 'internal', description: 'Where the number came from; recorded on the ledger entry.' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: SOURCE_MESSAGE })
  source?: string;
}

export class FilterResultDto {
  @ApiProperty({ example: 'US', nullable: true, type: String, description: 'ISO 3166-1 alpha-2 region; null when no region matches.' })
  country: string | null;

  @ApiProperty({ example: true, description: 'Valid for its numbering plan and not ABSENT.' })
  valid: boolean;

  @ApiProperty({ example: 'CONNECTED', enum: ['CONNECTED', 'ABSENT', 'UNDETERMINED'] })
  status: ConnectionStatus;

  @ApiProperty({ example: 'T-Mobile USA', nullable: true, type: String, description: 'Current operator when an enabled check knows it.' })
  carrier: string | null;

  @ApiProperty({ example: 'MOBILE', enum: LINE_TYPES, description: 'UNKNOWN when the Phone Number Type check is disabled.' })
  line_type: LineType;

  @ApiProperty({ example: false, description: 'false when not ported or the Portability check is disabled.' })
  is_ported: boolean;
}
