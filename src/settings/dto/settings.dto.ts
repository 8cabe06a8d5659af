import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsDefined, IsObject, IsOptional, ValidateNested } from 'class-validator';

export class ChecksDto {
  @ApiProperty({ example: true, description: 'Network Connection Status (status, carrier). Default on; 4 credits by default.' })
  network_status: boolean;

  @ApiProperty({ example: false, description: 'Phone Number Type (line_type). Default off; 1 credit by default.' })
  line_type: boolean;

  @ApiProperty({ example: false, description: 'Portability Status (is_ported, carrier). Default off; 2 credits by default.' })
  portability: boolean;
}

export class SettingsDto {
  @ApiProperty({ type: ChecksDto })
  checks: ChecksDto;

  @ApiProperty({ example: 4, minimum: 0, description: "Credits one POST /api/v1/filter costs with these checks: the sum of their prices (this deployment's)." })
  cost_per_call: number;

  @ApiProperty({ example: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE', description: 'HMAC key that signs bulk-job callbacks (X-Signature). Rotate it with POST /api/v1/settings/webhook-secret.' })
  webhook_secret: string;
}

export class WebhookSecretRotationDto {
  @ApiProperty({ example: 'whsec_Q3v8Zk1pN6tY0bRm4LxW9cJ2hF7dS5aG', description: 'The new HMAC key; callbacks are signed with it from now on.' })
  webhook_secret: string;

  @ApiProperty({
    example: '2026-11-24T05:00:00.000Z',
    format: 'date-time',
    description: 'Until then the previous secret still signs callbacks too: X-Signature carries both signatures, comma-separated, the new one first.',
  })
  previous_secret_valid_until: string;
}

export class ChecksPatchDto {
  @ApiPropertyOptional({ example: true, description: 'Network Connection Status (status, carrier); 4 credits by default.' })
  @IsOptional() @IsBoolean()
  network_status?: boolean;

  @ApiPropertyOptional({ example: true, description: 'Phone Number Type (line_type); 1 credit by default.' })
  @IsOptional() @IsBoolean()
  line_type?: boolean;

  @ApiPropertyOptional({ example: false, description: 'Portability Status (is_ported, carrier); 2 credits by default.' })
  @IsOptional() @IsBoolean()
  portability?: boolean;
}

export class UpdateSettingsDto {
  @ApiProperty({ type: ChecksPatchDto, description: 'Any subset of the three checks.', example: { line_type: true } })
  @IsDefined() @IsObject() @ValidateNested() @Type(() => ChecksPatchDto)
  checks: ChecksPatchDto;
}
