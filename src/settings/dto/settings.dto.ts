import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsDefined, IsObject, IsOptional, ValidateNested } from 'class-validator';

export class ChecksDto {
  @ApiProperty({ example: true, description: 'Network Connection Status (status, carrier). Default on.' })
  network_status: boolean;

  @ApiProperty({ example: false, description: 'Phone Number Type (line_type). Default off.' })
  line_type: boolean;

  @ApiProperty({ example: false, description: 'Portability Status (is_ported, carrier). Default off.' })
  portability: boolean;
}

export class SettingsDto {
  @ApiProperty({ type: ChecksDto })
  checks: ChecksDto;

  @ApiProperty({ example: 4, description: 'Credits one POST /api/v1/filter costs with these checks.' })
  cost_per_call: number;

  @ApiProperty({ example: 'whsec_3q2+7w...', description: 'Read-only HMAC key that signs bulk-job callbacks (X-Signature).' })
  webhook_secret: string;
}

export class ChecksPatchDto {
  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  network_status?: boolean;

  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  line_type?: boolean;

  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  portability?: boolean;
}

export class UpdateSettingsDto {
  @ApiProperty({ type: ChecksPatchDto, description: 'Any subset of the three checks.', example: { line_type: true } })
  @IsDefined() @IsObject() @ValidateNested() @Type(() => ChecksPatchDto)
  checks: ChecksPatchDto;
}
