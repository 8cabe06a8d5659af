import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsPhone } from '../../common/is-phone.decorator';
import { SOURCE_MESSAGE, SOURCE_PATTERN } from '../../common/source';

export class FilterRequestDto {
  @ApiProperty({ example: '+447400123456', description: 'E.164; spaces, "-", ".", "(" and ")" are ignored.' })
  @IsDefined({ message: 'phone is required' })
  @IsString()
  @MaxLength(64)
  @IsPhone()
  phone: string;

  @ApiPropertyOptional({ example: 'website', description: 'Where the number came from; recorded on the ledger entry. Default: `internal`.' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: SOURCE_MESSAGE })
  source?: string;
}
