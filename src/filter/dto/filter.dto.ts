import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { E164_MESSAGE, normalizePhone } from '../../common/phone';
import { SOURCE_MESSAGE, SOURCE_PATTERN } from '../../common/source';

const E164 = /^\+[1-9]\d{1,14}$/;

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
